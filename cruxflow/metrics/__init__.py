"""Metrics: CRUX's own (:mod:`.crux`, hand-written: no library has them), IR metrics through
ir_measures (:mod:`.ir`), the scorer behind ``cruxflow evaluate`` and the workflow's
``context_metrics`` (:mod:`.scorer`, :mod:`.evaluate`), token counts for density
(:mod:`.tokens`) and the statistics every report shares (:mod:`.stats`)."""

"""Metrics: one engine computes every measure, and every door only formats what it returns.

The registry (:mod:`.names`) defines each measure once: its parameters, what it reads and its
compute function (:mod:`.compute`). The engine (:class:`.scorer.ContextScorer`) builds the
judgments' arrays once (:mod:`.judged`), reads a run's lines against them
(:mod:`.cuts`; runs are read by :mod:`cruxflow.data.runs`) and calls a name's compute function.
The doors: ``cruxflow.evaluate`` (:mod:`.api`), ``cruxflow.compare`` (:mod:`.compare`), the
ir_measures measures (:mod:`.measures`), ``cruxflow evaluate`` (:mod:`.evaluate`), the CRUX
authors' script's semantics as names (:mod:`.crux_eval`) and the workflow's per-query tables
(:mod:`.per_query`). Statistics every report shares: :mod:`.stats` under :mod:`.policy`."""

"""Reference implementations the engine is checked against (issue 51): the CRUX paper's
formulas written topic by topic as the paper states them (:mod:`.crux_formulas`), and the
libraries' own routes (:mod:`.libraries`: trec_eval through pytrec_eval and ir_measures, ndeval
through pyndeval). They live with the tests, not beside the engine: cruxflow computes every
measure one way (:mod:`cruxflow.metrics.compute`), and these say what that way must give."""

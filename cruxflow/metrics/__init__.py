"""CRUX metrics (hand-written: no library has them), IR metrics (ir_measures), correlations."""

"""Rule figure5: per-query metrics of the sampled contexts -> Kendall tau between metrics."""

import pandas as pd

from cruxflow.data.outputs import atomic_write
from cruxflow.paper.figures import plot_tau_heatmap, tau_matrix
from cruxflow.paper.tables import select
from cruxflow.workflow.job import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
frame = pd.read_csv(sm.input[0], sep="\t", dtype={"k": str, "topic": str, "system": str})
matrix = tau_matrix(select(frame, eta=sm.params.eta))
with atomic_write(sm.output.tsv) as out:
    matrix.to_csv(out, sep="\t", float_format="%.4f")
plot_tau_heatmap(matrix, sm.output.png,
                 title=f"{sm.wildcards.dataset}: Kendall τ between metrics")
log.info("tau matrix over %s sampled contexts", matrix.attrs.get("n_contexts"))

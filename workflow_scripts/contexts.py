"""Rule contexts: a sampled run (Figure 5) -> its context Z (top-k passage ids) of every judged
topic; context_metrics writes the other systems' contexts."""

from cruxflow.metrics.judgments import read_judgments
from cruxflow.workflow.job import setup_logging, write_contexts

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
n = write_contexts(sm.output, [sm.wildcards.k], sm.input.run, read_judgments(sm.input.judgments))
log.info("%s: %d contexts of size k=%s", sm.wildcards.system, n, sm.wildcards.k)

"""Rule sample_runs: a first-stage run -> Figure 5's seeded random contexts, one run each."""

from cruxflow.data.io import read_run, write_run
from cruxflow.paper.figures import sample_contexts
from cruxflow.workflow.job import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
p = sm.params
run = {q: [r.doc_id for r in rows] for q, rows in read_run(sm.input.run).items()}
samples = sample_contexts(run, n_samples=len(sm.output), size=p.size, depth=p.depth,
                          seed=p.seed)
for path, sample in zip(sm.output, samples, strict=True):
    tag = path.rsplit("/", 1)[-1].removesuffix(".run")
    write_run(path, {q: [(d, float(len(ids) - i)) for i, d in enumerate(ids)]
                     for q, ids in sample.items()}, tag=tag)
log.info("%d samples of %d passages from the top %d, %d topics", len(samples), p.size, p.depth,
         len(run))

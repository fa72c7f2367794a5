"""Rule context_metrics: one run -> per-query CRUX and IR metrics for each context size."""

import pandas as pd

from cruxflow.evaluate import ContextScorer, check_run
from cruxflow.io import atomic_write, read_run
from cruxflow.judgments import read_judgments
from cruxflow.model import Dataset
from cruxflow.tokens import make_token_counter
from cruxflow.workflow import dataset_dir, setup_logging

log = setup_logging(snakemake)  # noqa: F821 - injected by Snakemake
p, wc = snakemake.params, snakemake.wildcards  # noqa: F821
dataset = Dataset.load(dataset_dir(snakemake))  # noqa: F821
texts = {pid: x.contents for pid, x in dataset.passages.items()}
run = read_run(snakemake.input.run)  # noqa: F821
check_run(run, dataset, texts, snakemake.input.run)  # noqa: F821
scorer = ContextScorer(dataset, read_judgments(snakemake.input.judgments), texts,  # noqa: F821
                       make_token_counter(p.tokenizer), eta=p.eta, alpha=p.alpha,
                       density_weight=p.density_weight)
frame = pd.concat([scorer.score(run, wc.system, k) for k in p.context_sizes], ignore_index=True)
with atomic_write(snakemake.output.per_query) as out:  # noqa: F821
    frame.to_csv(out, sep="\t", index=False, float_format="%.6f")
log.info("%s: %d topic x size rows", wc.system, len(frame))

"""Rule dense_search: every topic's query -> top-k passages by embedding similarity."""

from cruxflow.io import write_run
from cruxflow.model import Dataset
from cruxflow.retrieval import topic_queries
from cruxflow.retrieval.dense import search
from cruxflow.workflow import dataset_dir, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
d, depth = sm.params.dense, sm.params.depth
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
queries = topic_queries(dataset)
ranking = search(sm.input.index, queries, model=d["model"], pooling=d["pooling"],
                 l2_norm=d["l2_norm"], k=depth)
write_run(sm.output[0], ranking, tag="dense")
log.info("%d queries, %d hits", len(ranking), sum(map(len, ranking.values())))

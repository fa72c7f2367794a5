"""Rule dense_search: every topic's query -> top-k passages by embedding similarity."""

from cruxflow.data.model import Dataset
from cruxflow.retrieval import topic_queries
from cruxflow.retrieval.dense import search
from cruxflow.workflow.job import dataset_dir, setup_logging, write_checked_run

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
d = sm.params.dense
queries = topic_queries(Dataset.load(dataset_dir(sm), with_passages=False))
ranking = search(sm.input.index, queries, model=d["model"], pooling=d["pooling"],
                 l2_norm=d["l2_norm"], k=sm.params.depth)
write_checked_run(sm, ranking, queries, "dense", log)

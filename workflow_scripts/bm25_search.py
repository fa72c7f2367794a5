"""Rule bm25_search: every topic's query -> top-k passages of the corpus by BM25, a TREC run."""

from cruxflow.data.model import Dataset
from cruxflow.retrieval import topic_queries
from cruxflow.retrieval.bm25 import search
from cruxflow.workflow.job import dataset_dir, setup_logging, write_checked_run

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
p = sm.params
queries = topic_queries(Dataset.load(dataset_dir(sm), with_passages=False))
ranking = search(sm.input.index, queries, k=p.depth, k1=p.k1, b=p.b, threads=sm.threads)
write_checked_run(sm, ranking, queries, f"bm25-k1_{p.k1}-b_{p.b}", log)

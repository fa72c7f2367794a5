"""Rule bm25_search: every topic's query -> top-k passages by BM25, as a TREC run."""

from cruxflow.io import write_run
from cruxflow.model import Dataset
from cruxflow.retrieval import topic_queries
from cruxflow.retrieval.bm25 import search
from cruxflow.workflow import dataset_dir, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
p = sm.params
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
queries = topic_queries(dataset)
ranking = search(sm.input.index, queries, k=p.depth, k1=p.k1, b=p.b, threads=sm.threads)
short = [q for q, hits in ranking.items() if len(hits) < p.depth]
write_run(sm.output[0], ranking, tag=f"bm25-k1_{p.k1}-b_{p.b}")
log.info("%d queries, %d hits; %d queries with fewer than %d hits", len(ranking),
         sum(map(len, ranking.values())), len(short), p.depth)

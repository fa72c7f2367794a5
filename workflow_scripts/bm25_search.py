"""Rule bm25_search: every topic's query -> top-k passages by BM25, as a TREC run."""

from cruxflow.io import write_run
from cruxflow.model import Dataset
from cruxflow.retrieval.bm25 import search
from cruxflow.workflow import dataset_dir, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
p = sm.params
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
queries = {t.topic_id: t.query for t in dataset.topics.values() if t.query}
missing = sorted(set(dataset.topics) - set(queries))
if missing:
    log.warning("%d topics have no query and get no ranking: %s", len(missing), missing[:5])
ranking = search(sm.input.index, queries, k=p.depth, k1=p.k1, b=p.b, threads=sm.threads)
short = [q for q, hits in ranking.items() if len(hits) < p.depth]
write_run(sm.output[0], ranking, tag=f"bm25-k1_{p.k1}-b_{p.b}")
log.info("%d queries, %d hits; %d queries with fewer than %d hits", len(ranking),
         sum(map(len, ranking.values())), len(short), p.depth)

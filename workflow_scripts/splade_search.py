"""Rule splade_search: every topic's query -> top-k passages by SPLADE impact scores."""

from cruxflow.data.model import Dataset
from cruxflow.retrieval import topic_queries
from cruxflow.retrieval.splade import search
from cruxflow.workflow.job import dataset_dir, job_device, setup_logging, write_checked_run

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
s = sm.params.splade
queries = topic_queries(Dataset.load(dataset_dir(sm), with_passages=False))
ranking = search(sm.input.index, queries, model=s["model"], k=sm.params.depth,
                 batch_size=s["batch_size"], max_length=s["max_length"], quant=s["quant"],
                 device=job_device(sm), threads=sm.threads)
write_checked_run(sm, ranking, queries, "splade", log)

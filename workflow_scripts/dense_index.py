"""Rule dense_index: the dataset's passages -> a FAISS index of their embeddings."""

import torch

from cruxflow.model import Dataset
from cruxflow.retrieval.dense import build_index
from cruxflow.workflow import dataset_dir, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
torch.set_num_threads(sm.threads)
d = sm.params.dense
dataset = Dataset.load(dataset_dir(sm))
build_index(((p.id, p.contents) for p in dataset.passages.values()), sm.output[0],
            model=d["model"], pooling=d["pooling"], l2_norm=d["l2_norm"],
            batch_size=d["batch_size"], max_length=d["max_length"], progress=True)
log.info("encoded %d passages with %s", len(dataset.passages), d["model"])

"""Rule dense_index: the corpus -> a FAISS index of its passages' embeddings."""

import torch

from cruxflow.retrieval.corpus import read_collection
from cruxflow.retrieval.dense import build_index
from cruxflow.workflow import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
torch.set_num_threads(sm.threads)
d = sm.params.dense
texts = read_collection(sm.input[0])
build_index(texts.items(), sm.output[0], model=d["model"], pooling=d["pooling"],
            l2_norm=d["l2_norm"], batch_size=d["batch_size"], max_length=d["max_length"],
            progress=True)
log.info("encoded %d passages with %s", len(texts), d["model"])

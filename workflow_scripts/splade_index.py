"""Rule splade_index: the corpus -> SPLADE impact vectors in a Lucene index."""

import torch

from cruxflow.retrieval.corpus import read_collection
from cruxflow.retrieval.splade import build_index
from cruxflow.workflow import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
torch.set_num_threads(sm.threads)
s = sm.params.splade
texts = read_collection(sm.input[0])
build_index(texts.items(), sm.output[0], model=s["model"], batch_size=s["batch_size"],
            max_length=s["max_length"], quant=s["quant"],
            device="cuda" if s["gpus"] > 0 else "cpu", threads=sm.threads, progress=True)
log.info("encoded %d passages with %s", len(texts), s["model"])

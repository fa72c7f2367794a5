"""Rule splade_encode: one shard of the corpus -> its SPLADE impact vectors (JSONL)."""

import torch

from cruxflow.retrieval.splade import encode_shard
from cruxflow.workflow.job import encoding_shard, job_device, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
torch.set_num_threads(sm.threads)
s = sm.params.splade
passages, total = encoding_shard(sm, s["batch_size"])
n = encode_shard(passages, sm.output[0], model=s["model"], batch_size=s["batch_size"],
                 max_length=s["max_length"], quant=s["quant"], device=job_device(sm),
                 progress=True)
log.info("%s: encoded %d of the corpus's %d passages with %s", sm.output[0], n, total,
         s["model"])

"""Rule dense_encode: one shard of the corpus -> its passages' ids and embeddings (.npz)."""

import torch

from cruxflow.retrieval.dense import encode_shard
from cruxflow.workflow.job import encoding_shard, job_device, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
torch.set_num_threads(sm.threads)
d = sm.params.dense
passages, total = encoding_shard(sm, d["batch_size"])
n = encode_shard(passages, sm.output[0], model=d["model"], pooling=d["pooling"],
                 l2_norm=d["l2_norm"], batch_size=d["batch_size"], max_length=d["max_length"],
                 device=job_device(sm), progress=True)
log.info("%s: encoded %d of the corpus's %d passages with %s", sm.output[0], n, total,
         d["model"])

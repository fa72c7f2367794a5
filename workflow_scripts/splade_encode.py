"""Rule splade_encode: one shard of the corpus -> its SPLADE impact vectors (JSONL)."""

import torch

from cruxflow.retrieval.corpus import corpus_shard, read_collection
from cruxflow.retrieval.splade import encode_shard
from cruxflow.workflow import job_device, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
torch.set_num_threads(sm.threads)
s = sm.params.splade
shard, shards = int(sm.wildcards.shard), int(sm.wildcards.shards)
texts = read_collection(sm.input[0])
# Cut at batch boundaries: the shards' batches are those of encoding the corpus at once.
passages = corpus_shard(list(texts.items()), shard, shards, align=s["batch_size"])
n = encode_shard(passages, sm.output[0], model=s["model"], batch_size=s["batch_size"],
                 max_length=s["max_length"], quant=s["quant"],
                 device=job_device(sm), progress=True)
log.info("shard %d of %d: encoded %d of the corpus's %d passages with %s", shard, shards, n,
         len(texts), s["model"])

"""Rule judge_holes: the unjudged passages in the top k of runs -> added ratings (one shard)."""

from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.retrieval.corpus import read_collection
from cruxflow.stages.holes import judge_runs
from cruxflow.stages.ratings import rating_options
from cruxflow.workflow.job import (
    dataset_dir,
    llm_runner,
    log_llm_stats,
    sampling,
    setup_logging,
    write_call_stats,
)

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
p, wc = sm.params, sm.wildcards
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
options = rating_options(p.llm)
records, summary, runner = judge_runs(
    dataset, dict(zip(p.systems, sm.input.runs, strict=True)),
    read_collection(sm.input.collection),
    lambda: llm_runner(sm, f"judge_holes {wc.dataset} shard {wc.shard}"),
    k=p.k, shard=int(wc.shard), shards=int(wc.shards), prompt=p.rating_prompt,
    sampling=sampling(p.llm, "judgment"), options=options)
write_jsonl(sm.output[0], records)
log.info("%s", summary)
if runner is None:
    write_call_stats(sm, None, log)
else:
    log_llm_stats(sm, runner, log)
    runner.close()

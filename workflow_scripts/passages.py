"""Rule passages: one shard of the documents -> decontextualized passages (Fig. 7)."""

from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.stages.checks import passage_checks
from cruxflow.stages.passages import decontextualize, sends_to_llm
from cruxflow.stages.prepare import documents_of_shard
from cruxflow.workflow.job import (
    dataset_dir,
    llm_runner,
    log_llm_stats,
    sampling,
    setup_logging,
    write_content_checks,
)

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
cfg = sm.params.llm
stage = cfg["passages"]
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
docs = documents_of_shard(dataset, int(sm.wildcards.shard), int(sm.wildcards.shards),
                          distractors=stage["distractors"])
runner = llm_runner(sm, f"passages {sm.wildcards.dataset} shard {sm.wildcards.shard}")
passages = decontextualize(docs, runner, sampling=sampling(cfg, "generation",
                                                           max_tokens=stage["max_tokens"]),
                           max_words=stage["max_document_words"],
                           chunk_words=stage["chunk_words"],
                           min_words=stage["min_passage_words"],
                           max_passages=stage["max_passages"], attempts=cfg["attempts"],
                           distractors=stage["distractors"], split_words=stage["split_words"])
write_jsonl(sm.output[0], (p.to_json() for p in passages))
log.info("%d documents -> %d passages", len(docs), len(passages))
log_llm_stats(sm, runner, log)
runner.close()
# what a reader would notice: passages naming what their document lacks (the LLM's only)
written = {d.doc_id: d for d in docs if sends_to_llm(d, stage["distractors"])}
write_content_checks(sm, passage_checks(passages, written), log)

"""Rule rag_generate: a system's contexts of size k (none for #1) -> one report per topic."""

from cruxflow.data.io import iter_jsonl, write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.metrics.judgments import read_judgments
from cruxflow.metrics.tokens import make_token_counter, make_token_truncator
from cruxflow.rag.reports import ReportTask, generate_reports, rag_topics, read_topic_list
from cruxflow.retrieval.corpus import read_collection
from cruxflow.workflow.job import dataset_dir, llm_runner, log_llm_stats, sampling, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
p, wc = sm.params, sm.wildcards
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
texts = read_collection(sm.input.collection)
judged = {t: j for t, j in read_judgments(sm.input.judgments).items() if j.kept}
count = make_token_counter(p.tokenizer)
contexts = {obj["topic_id"]: obj["passages"] for _, obj in iter_jsonl(sm.input.contexts)} \
    if "contexts" in sm.input.keys() else None
# rag.topics: the dataset's topic list, when it has one (input key "topic_list"; "topics" is
# the dataset's own topics.jsonl)
chosen = (read_topic_list(sm.input.topic_list, dataset.topics)
          if "topic_list" in sm.input.keys() else None)
tasks = []
for tid in rag_topics(judged, p.max_topics, chosen):
    j = judged[tid]
    budget = sum(count(texts[pid]) for pid in j.required)   # token(Z*)
    if p.max_tokens:
        budget = min(budget, p.max_tokens)
    ids = None if contexts is None else contexts.get(tid, [])
    tasks.append(ReportTask(tid, dataset.topics[tid].query, ids or [],
                            None if ids is None else [texts[i] for i in ids], budget))
runner = llm_runner(sm, f"reports {wc.dataset} {wc.system} k={wc.k}")
records = generate_reports(tasks, runner, truncate=make_token_truncator(p.tokenizer),
                           count_tokens=count, sampling=sampling(p.llm, "generation"),
                           max_context_words=p.max_context_words)
write_jsonl(sm.output[0], ({"system": wc.system, "k": wc.k, **r} for r in records))
if chosen is not None:
    log.info("topic list %s: %d topics, %d of them judged at this eta", sm.input.topic_list,
             len(chosen), len(set(chosen) & set(judged)))
log.info("%d reports, %d truncated to their bound, %d with context words cut",
         len(records), sum(r["truncated"] for r in records),
         sum(r["context_words_dropped"] > 0 for r in records))
log_llm_stats(sm, runner, log)
runner.close()

"""Rule subquestions: human summary -> n sub-questions (Fig. 6); a topic of one's own that
brings its questions keeps them, one without a summary gets them from its documents."""

from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.stages.questions import subquestions, to_generate
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
cfg = sm.params.llm
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
todo, given = to_generate(list(dataset.topics.values()), "questions")
if given:
    log.info("%d topics bring their sub-questions: not generated for them", len(given))
questions = {}
if todo:
    runner = llm_runner(sm, f"sub-questions {sm.wildcards.dataset}")
    questions = subquestions(todo, runner, sm.params.n, attempts=cfg["attempts"],
                             documents=dataset.documents,
                             sampling=sampling(cfg, "generation",
                                               max_tokens=cfg["subquestions"]["max_tokens"]))
    log_llm_stats(sm, runner, log)
    runner.close()
else:
    write_call_stats(sm, None, log)
questions.update(given)
write_jsonl(sm.output[0], ({"topic_id": t, "questions": questions[t]} for t in dataset.topics))
counts = [len(q) for q in questions.values()]
log.info("%d topics, %d sub-questions (min %d, max %d per topic; asked for %d; %d topics given)",
         len(counts), sum(counts), min(counts, default=0), max(counts, default=0), sm.params.n,
         len(given))

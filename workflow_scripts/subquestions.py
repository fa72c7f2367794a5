"""Rule subquestions: human summary -> n sub-questions (Fig. 6); a topic of one's own that
brings its questions keeps them, one without a summary gets them from its documents, or from
its report request with questions_from: request (the CRUX authors' Researchy prompt)."""

from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.stages.checks import subquestion_checks
from cruxflow.stages.prepare import read_topic_field
from cruxflow.stages.questions import subquestions, with_queries
from cruxflow.workflow.job import (
    dataset_dir,
    generate_missing,
    sampling,
    setup_logging,
    write_content_checks,
)

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
cfg = sm.params.llm
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
topics = list(dataset.topics.values())
if sm.params.questions_from == "request":   # the requests, given or generated
    topics = with_queries(topics, read_topic_field(sm.input.report_requests, "query"))
questions, given = generate_missing(
    sm, topics, "questions", "sub-questions", lambda todo, runner:
    subquestions(todo, runner, sm.params.n, attempts=cfg["attempts"],
                 documents=dataset.documents, questions_from=sm.params.questions_from,
                 sampling=sampling(cfg, "generation",
                                   max_tokens=cfg["subquestions"]["max_tokens"])), log)
write_jsonl(sm.output[0], ({"topic_id": t, "questions": questions[t]} for t in dataset.topics))
counts = [len(q) for q in questions.values()]
log.info("%d topics, %d sub-questions (min %d, max %d per topic; asked for %d; %d topics given)",
         len(counts), sum(counts), min(counts, default=0), max(counts, default=0), sm.params.n,
         len(given))
# what a reader would notice in the questions written (not in those the topics brought)
written = {t: q for t, q in questions.items() if t not in given}
write_content_checks(sm, subquestion_checks(written, sm.params.n, dataset.topics,
                                            dataset.documents), log)

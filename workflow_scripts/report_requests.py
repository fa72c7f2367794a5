"""Rule report_requests: human summary -> open-ended report request x (Fig. 9); a topic of one's
own that brings its request keeps it, one without a summary gets it from its documents."""

from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Dataset
from cruxflow.stages.checks import request_checks
from cruxflow.stages.questions import report_requests
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
queries, given = generate_missing(
    sm, list(dataset.topics.values()), "query", "report request", lambda todo, runner:
    report_requests(todo, runner, attempts=cfg["attempts"], documents=dataset.documents,
                    sampling=sampling(cfg, "generation",
                                      max_tokens=cfg["report_request"]["max_tokens"])), log)
write_jsonl(sm.output[0], ({"topic_id": t, "query": queries[t]} for t in dataset.topics))
log.info("%d report requests (%d generated)", len(queries), len(queries) - len(given))
# what a reader would notice in the requests written (not in those the topics brought)
written = {t: q for t, q in queries.items() if t not in given}
write_content_checks(sm, request_checks(written, dataset.topics, dataset.documents), log)

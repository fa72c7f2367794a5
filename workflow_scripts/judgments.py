"""Rule judgments: answerability matrix (with the holes' added ratings) -> kept questions,
P**, qrels, oracle run."""

from pathlib import Path

from cruxflow.data.io import write_json
from cruxflow.metrics.judgments import derive, write_judgments
from cruxflow.workflow.job import rated_dataset, setup_logging

log = setup_logging(snakemake)  # noqa: F821 - injected by Snakemake
eta = int(snakemake.wildcards.eta)  # noqa: F821
dataset, sources = rated_dataset(snakemake, log)  # noqa: F821
judgments = derive(dataset, eta, snakemake.params.alpha)  # noqa: F821
summary = write_judgments(judgments, dataset, Path(snakemake.output.judgments).parent, eta,  # noqa: F821
                          grades=snakemake.params.relevance_grades)  # noqa: F821
write_json(snakemake.output.summary, {"eta": eta, **summary,  # noqa: F821
                                      **({"ratings": sources} if sources else {})})
log.info("judgments at eta=%d: %s", eta, summary)

"""Rule reference_runs: seeded random rankings over the collection and over P* (from the
dataset's ratings and the added ones of its holes)."""

from cruxflow.data.io import write_run
from cruxflow.data.names import RANDOM, RANDOM_RELEVANT
from cruxflow.metrics.judgments import derive
from cruxflow.retrieval.baselines import random_ranking
from cruxflow.workflow.job import rated_dataset, setup_logging

log = setup_logging(snakemake)  # noqa: F821 - injected by Snakemake
p, out = snakemake.params, snakemake.output  # noqa: F821
dataset, _ = rated_dataset(snakemake, with_passages=True)  # noqa: F821
judgments = derive(dataset)  # P* does not depend on eta; only the relevant sets are used
for path, relevant_only in ((out.random, False), (out.random_relevant, True)):
    ranking = random_ranking(judgments, list(dataset.passages), relevant_only=relevant_only,
                             depth=p.depth, seed=p.seed)
    write_run(path, ranking, tag=RANDOM_RELEVANT if relevant_only else RANDOM)
    log.info("wrote %s (%d topics)", path, len(ranking))

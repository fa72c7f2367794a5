"""Rule contexts: a run -> the context Z (top-k passage ids) of every judged topic."""

from cruxflow.data.io import read_run, write_jsonl
from cruxflow.metrics.judgments import read_judgments
from cruxflow.metrics.scorer import contexts, parse_context_size
from cruxflow.workflow.job import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
k = parse_context_size(sm.wildcards.k)
judged = {t: j for t, j in read_judgments(sm.input.judgments).items() if j.kept}
ctxs = contexts(read_run(sm.input.run), judged, k)
n = write_jsonl(sm.output[0], ({"topic_id": t, "k": str(k), "oracle_size": len(judged[t].required),
                                "passages": ids} for t, ids in ctxs.items()))
log.info("%s: %d contexts of size k=%s", sm.wildcards.system, n, k)

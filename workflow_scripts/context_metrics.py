"""Rule context_metrics: one run's contexts of each size k -> per-query CRUX and IR metrics, and
the context files of the metrics' and the RAG stage's sizes."""

from cruxflow.data.outputs import atomic_write
from cruxflow.data.runs import check_run, read_run_file
from cruxflow.metrics.judgments import read_judgments
from cruxflow.metrics.options import MetricOptions
from cruxflow.metrics.scorer import ContextScorer, parse_context_size
from cruxflow.metrics.tokens import make_token_counter
from cruxflow.retrieval.corpus import read_collection
from cruxflow.workflow.job import rated_dataset, setup_logging, write_contexts

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
p, wc = sm.params, sm.wildcards
dataset, _ = rated_dataset(sm)   # with the holes' added ratings, where it has some
texts = read_collection(sm.input.collection)   # the corpus: passages of other datasets too
run = read_run_file(sm.input.run).lines   # by column, a block of lines at a time
check_run(run, dataset.topics, texts, sm.input.run)
options = MetricOptions(eta=p.eta, alpha=p.alpha, density_weight=p.density_weight,
                        relevance_grades=p.relevance_grades, tokenizer=p.tokenizer)
judgments = read_judgments(sm.input.judgments)
scorer = ContextScorer(dataset, judgments, texts,
                       make_token_counter(p.tokenizer), options)
tie_line = scorer.tie_line(run, [parse_context_size(k) for k in p.context_sizes])
if tie_line:
    log.warning("%s: %s", wc.system, tie_line)
frame = scorer.score_many([(run, wc.system, parse_context_size(k)) for k in p.context_sizes])
with atomic_write(sm.output.per_query) as out:
    frame.to_csv(out, sep="\t", index=False, float_format="%.6f")
log.info("%s: %d topic x size rows", wc.system, len(frame))
n = write_contexts(sm.output.contexts, p.context_files, sm.input.run, judgments)
log.info("%s: %d contexts of each size k in %s", wc.system, n, ", ".join(p.context_files))

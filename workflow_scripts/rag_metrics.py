"""Rule rag_metrics: contexts, reports and their ratings -> per-query Z and y metrics per eta."""

import pandas as pd

from cruxflow.data.io import iter_jsonl
from cruxflow.data.names import DIRECT, HUMAN, ORACLE_K
from cruxflow.data.outputs import atomic_write
from cruxflow.metrics.judgments import derive
from cruxflow.metrics.options import MetricOptions
from cruxflow.metrics.scorer import ContextScorer
from cruxflow.metrics.tokens import make_token_counter
from cruxflow.rag.reports import final_scores, rag_topics, read_topic_list
from cruxflow.retrieval.corpus import read_collection
from cruxflow.workflow.job import rated_dataset, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
p, wc = sm.params, sm.wildcards
dataset, _ = rated_dataset(sm)   # with the holes' added ratings, where it has some
texts = read_collection(sm.input.collection)
count = make_token_counter(p.tokenizer)
# rag.topics: the dataset's topic list, when it has one (input key "topic_list"; "topics" is
# the dataset's own topics.jsonl)
chosen = (read_topic_list(sm.input.topic_list, dataset.topics)
          if "topic_list" in sm.input.keys() else None)
topics = rag_topics({t for t, j in derive(dataset, int(wc.eta), p.alpha).items() if j.kept},
                    p.max_topics, chosen)
scorers = [ContextScorer(dataset, derive(dataset, eta, p.alpha), texts, count,
                         MetricOptions(eta=eta, alpha=p.alpha, density_weight=p.density_weight,
                                       relevance_grades=p.relevance_grades)) for eta in p.etas]


def by_topic(path, field):
    return {obj["topic_id"]: obj[field] for _, obj in iter_jsonl(path)}


contexts = iter(sm.input.contexts)
frames = []
for (system, k), reports, ratings in zip(p.pairs, sm.input.reports, sm.input.ratings,
                                         strict=True):
    ctx = None if system == DIRECT else by_topic(next(contexts), "passages")
    tokens, rated = by_topic(reports, "tokens"), by_topic(ratings, "ratings")
    frames += [final_scores(s, system, k, rated, tokens, ctx, topics) for s in scorers]
# #2: the human summary y* as the result, rated with the passages; none where the topics have
# no summary (one's own documents without reference.txt): a row of zeros would be read as a score
if wc.which == "main" and dataset.reference_ratings:
    rated = {t: r.ratings for t, r in dataset.reference_ratings.items()}
    tokens = {t: count(topic.reference) for t, topic in dataset.topics.items()
              if topic.reference is not None}
    frames += [final_scores(s, HUMAN, ORACLE_K, rated, tokens, None, topics) for s in scorers]
frame = pd.concat(frames, ignore_index=True)
frame.insert(0, "dataset", wc.dataset)
with atomic_write(sm.output[0]) as out:
    # full precision: the significance table's paired tests read these values, and rounding
    # would break the ties (|1/3 - 0| = |2/3 - 1/3|) that every other door's tests see
    frame.to_csv(out, sep="\t", index=False)
log.info("%d rows: %d systems x sizes, thresholds %s", len(frame), len(p.pairs) + 1, p.etas)

"""Rule ratings: (passage, sub-question) pairs and the human summaries -> 0-5 ratings (Fig. 8)."""

from collections import defaultdict

from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Dataset, Topic
from cruxflow.stages.prepare import read_passages, read_topic_field, topics_of_shard
from cruxflow.stages.ratings import rate, rating_options
from cruxflow.workflow.job import dataset_dir, llm_runner, log_llm_stats, sampling, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
cfg = sm.params.llm
dataset = Dataset.load(dataset_dir(sm), with_passages=False)
questions = read_topic_field(sm.input.subquestions, "questions")
by_topic = defaultdict(list)
for p in read_passages(sm.input.generated_passages).values():
    # P*: the passages of the topic's own documents; with questions_from: request none (the
    # pool of the runs' top k is rated by rule judge_holes)
    if p.topic_id is not None and sm.params.questions_from != "request":
        by_topic[p.topic_id].append(p)
pairs = {t: (len(by_topic[t]) + 1) * len(questions.get(t, [])) for t in dataset.topics}
topics = [Topic(t.topic_id, t.reference, t.doc_ids, t.query, questions[t.topic_id],
                t.references, t.source_id)
          for t in topics_of_shard(dataset, int(sm.wildcards.shard), int(sm.wildcards.shards),
                                   pairs)]
runner = llm_runner(sm, f"ratings {sm.wildcards.dataset} shard {sm.wildcards.shard}")
result = rate(topics, by_topic, runner, sampling=sampling(cfg, "judgment"),
              **rating_options(cfg))
write_jsonl(sm.output.ratings, (r.to_json() for r in result.passages))
write_jsonl(sm.output.references, (r.to_json() for r in result.references))
log.info("%d topics: %d passages and %d summaries rated", len(topics), len(result.passages),
         len(result.references))
log_llm_stats(sm, runner, log)
runner.close()

"""Rules rerank, rerank_pooled and rerank_llm: first-stage runs -> the same candidates
reordered."""

from pathlib import Path

from cruxflow.data.io import write_run
from cruxflow.data.model import Dataset
from cruxflow.rerank import keep_rest, rerank_run
from cruxflow.rerank.factory import make_reranker
from cruxflow.rerank.registry import kind
from cruxflow.retrieval import topic_queries
from cruxflow.retrieval.corpus import read_collection, run_ranking
from cruxflow.workflow.job import dataset_dir, job_device, log_llm_stats, setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
spec, name = sm.params.spec, sm.wildcards.reranker
if kind(spec["kind"]).env == "rerank":
    # The torch rerankers; LLM ones run in the LLM environments, which have no torch.
    import torch

    torch.set_num_threads(sm.threads)
runners = []


def llm_runner(backend):
    from cruxflow.llm import make_runner

    runners.append(make_runner(sm.params.llm, backend or sm.params.llm["backend"],
                               threads=sm.threads, desc=f"{spec['kind']} {name}"))
    return runners[-1]


dataset = Dataset.load(dataset_dir(sm), with_passages=False)
queries = topic_queries(dataset)
# The topics' own sub-questions, by query text, for LANCER's subquestions: topic.
questions = {queries[t]: dataset.topics[t].questions for t in queries}
reranker = make_reranker(spec, llm_runner=llm_runner, device=job_device(sm), questions=questions)
texts = read_collection(sm.input.collection)
# Rule rerank_pooled: every first stage of the dataset, one model (MMR encodes a passage once
# however many first stages retrieved it); rules rerank and rerank_llm: one first stage.
pairs = (zip(sm.input.runs, sm.output, strict=True) if hasattr(sm.input, "runs")
         else [(sm.input.run, sm.output[0])])
for run, output in pairs:
    first_stage = run_ranking(run)
    ranking = rerank_run(first_stage, queries, texts, reranker, depth=sm.params.depth,
                         progress=True)
    # A reranker given fewer candidates than retrieval.depth (its own depth) keeps the rest
    # below.
    ranking = keep_rest(ranking, first_stage, sm.params.run_depth)
    system = Path(output).name.removesuffix(".run")   # <retriever>+<reranker>
    write_run(output, ranking, tag=system)
    log.info("%s: %s (%s, %s): %d queries reranked", system, name, spec["kind"],
             spec.get("model", "-"), len(ranking))
for runner in runners:
    log_llm_stats(sm, runner, log)
    runner.close()

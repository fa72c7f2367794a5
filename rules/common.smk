# Shared by all rule files. Config validation (the schema fills in every default, also
# inside each dataset entry) and the functions that list targets and inputs.

import dataclasses
import os
import re
import sys
from types import SimpleNamespace

from snakemake.logging import logger

sys.path.insert(0, workflow.basedir)
from cruxflow.data import names
from cruxflow.data.errors import ConfigError
from cruxflow.data.ingest import formats as ingest_formats
from cruxflow.rerank import registry as reranker_registry
from cruxflow.workflow import config as workflow_config
from cruxflow.workflow.llm_role import LLMRole

# The one config check, the one `cruxflow plan` makes (cruxflow/workflow/config.py): the schema
# with its defaults, format-dependent defaults, the checks across keys and the files named,
# before any DAG is built; one line per problem, naming its key.
try:
    workflow_config.check(config, workflow.basedir)
except ConfigError as e:
    sys.exit(f"cruxflow: {e}")

# A lock left by a run killed hard: one line saying what to do, before Snakemake's own message.
if workflow.is_main_process:
    from cruxflow.workflow.job import stale_lock_note

    if note := stale_lock_note():
        print(note, file=sys.stderr)

# Workflow scripts import the cruxflow package from this checkout, also inside the conda
# environments of the rules (which install the dependencies, not the package itself).
os.environ.update(
    PYTHONPATH=os.pathsep.join(
        p for p in (workflow.basedir, os.environ.get("PYTHONPATH")) if p
    )
)

DATASETS = config["datasets"]
METRICS = config["metrics"]
ETA = METRICS["eta"]
LLM = config["llm"]
RATED = workflow_config.rated_datasets(config)
REFERENCE_RUNS = list(names.REFERENCE_RUNS)
RETRIEVAL = config["retrieval"]
SHARDS = LLM["shards"]
# Knowledge corpora: a dataset retrieves from its own passages unless it names a shared corpus.
CORPORA = workflow_config.corpora(config)


def ingest_options(wildcards):
    """Params function: the dataset's options of reading, from its entry (and llm.passages),
    as the format registry builds them."""
    return dataclasses.asdict(
        ingest_formats.options_from_config(config, wildcards.dataset)
    )


def ingest_inputs(wildcards):
    """The dataset's input and every file its options name (distractors, collection, ...)."""
    options = ingest_formats.options_from_config(config, wildcards.dataset)
    return [DATASETS[wildcards.dataset]["input"], *ingest_formats.option_paths(options)]


def corpus_of(dataset):
    return DATASETS[dataset]["corpus"] or dataset


def collection(wildcards):
    """The JsonCollection file of the corpus that the rule's dataset retrieves from."""
    return f"results/corpus/{corpus_of(wildcards.dataset)}/collection/passages.jsonl"


def index_of(kind):
    return lambda wc: f"results/indexes/{corpus_of(wc.dataset)}/{kind}"


# Dense and SPLADE encoding: retrieval.encoding_shards jobs per corpus, then one gather job.
ENCODING_SHARDS = RETRIEVAL["encoding_shards"]
DENSE_SHARD = "results/indexes/{corpus}/dense.shards/shard{shard}-of{shards}.npz"
SPLADE_SHARD = "results/indexes/{corpus}/splade.shards/shard{shard}-of{shards}.jsonl"


def encoding_shards(pattern):
    """Input function: every encoding shard of the rule's corpus, in shard order."""
    return lambda wc: [
        pattern.format(corpus=wc.corpus, shard=s, shards=ENCODING_SHARDS)
        for s in range(ENCODING_SHARDS)
    ]


# First stages, and the second stages applied to each (system "<retriever>+<reranker>").
RETRIEVERS = [
    r
    for r in RETRIEVAL["retrievers"]
    if r != "splade" or RETRIEVAL["splade"]["model"] is not None
]
if "splade" in RETRIEVAL["retrievers"] and "splade" not in RETRIEVERS:
    logger.info(
        "cruxflow: learned-sparse retrieval (splade) skipped: retrieval.splade.model is not "
        "set (the paper preset names naver/splade-v3)"
    )
RERANKERS = RETRIEVAL["rerankers"]
PIPELINES = workflow_config.pipelines(config)
CONTEXT_SIZES = [str(k) for k in METRICS["context_sizes"]]


def rerankers_in_env(env, per_dataset=False):
    """A wildcard pattern matching the names of the rerankers whose kind runs in ``env``
    (cruxflow/rerank/registry.py), one job per first stage or, with ``per_dataset``, one job
    per dataset (registry.per_dataset); or nothing."""
    kinds = reranker_registry.kinds_in_env(env)
    names = [
        re.escape(n)
        for n, spec in RERANKERS.items()
        if spec["kind"] in kinds and reranker_registry.per_dataset(spec) == per_dataset
    ]
    return "|".join(names) if names else "(?!)"


def reranker_spec(wildcards):
    return RERANKERS[wildcards.reranker]


def reranker_depth(wildcards):
    return reranker_spec(wildcards).get("depth") or RETRIEVAL["depth"]


RERANKER_LLM = LLMRole(
    LLM, lambda wc: reranker_spec(wc).get("llm_backend") or LLM["backend"]
)


def reranker_resource(key, default):
    """Resource function: the reranker's own setting; else, for one that calls an llm
    backend, that backend's (its gpus, mem_mb, runtime); else ``default``."""

    def resource(wildcards):
        spec = reranker_spec(wildcards)
        if spec.get(key):
            return spec[key]
        if reranker_registry.uses_llm_backend(spec):
            return getattr(RERANKER_LLM, key)(wildcards)
        return default

    return resource


def systems(dataset):
    return [
        names.ORACLE,
        *REFERENCE_RUNS,
        *RETRIEVERS,
        *PIPELINES,
        *config["runs"].get(dataset, {}),
    ]


def run_file(wildcards):
    if SAMPLE_SYSTEM.fullmatch(wildcards.system):
        return f"results/runs/{wildcards.dataset}/samples/{wildcards.system}.run"
    if wildcards.system == names.ORACLE:
        return f"results/judgments/{wildcards.dataset}/eta{wildcards.eta}/oracle.run"
    if wildcards.system in config["runs"].get(wildcards.dataset, {}):
        return config["runs"][wildcards.dataset][wildcards.system]
    return f"results/runs/{wildcards.dataset}/{wildcards.system}.run"


def dataset_files(d="results/data/{dataset}"):
    """The files of a dataset directory (see docs/data-model.md), by name."""
    return {key: f"{d}/{name}" for key, name in names.DATASET_FILES.items()}


INGESTED = "results/ingested/{dataset}"


def llm_backend_name(wildcards):
    """The name of the llm.backends entry that a dataset's LLM stages use."""
    return DATASETS[wildcards.dataset]["llm_backend"] or LLM["backend"]


def llm_backend(wildcards):
    return LLM["backends"][llm_backend_name(wildcards)]


# The LLM rules' threads, resources, conda environment and params, per job: written once in
# cruxflow/workflow/llm_role.py, one role per way of choosing the backend.
DATASET_LLM = LLMRole(LLM, llm_backend_name)


def shard_files(pattern):
    """Input function: every shard of a sharded stage for the rule's dataset."""
    return lambda wc: expand(
        pattern, dataset=wc.dataset, shard=range(SHARDS), shards=SHARDS
    )


def prepare_inputs(wildcards):
    inputs = dataset_files(INGESTED.format(dataset=wildcards.dataset))
    if DATASETS[wildcards.dataset]["generate"]:
        g = f"results/generated/{wildcards.dataset}"
        inputs.update(
            report_requests=f"{g}/report_requests.jsonl",
            subquestions=f"{g}/subquestions.jsonl",
            passages_shards=shard_files(GENERATED_PASSAGES)(wildcards),
            ratings_shards=shard_files(GENERATED_RATINGS)(wildcards),
            reference_shards=shard_files(GENERATED_REFERENCE_RATINGS)(wildcards),
        )
    return inputs


def subquestion_inputs(wildcards):
    """The ingested dataset, and its report requests where the questions are written from
    them (questions_from: request)."""
    d = wildcards.dataset
    inputs = {
        key: path.format(dataset=d) for key, path in dataset_files(INGESTED).items()
    }
    if DATASETS[d]["questions_from"] == "request":
        inputs["report_requests"] = f"results/generated/{d}/report_requests.jsonl"
    return inputs


GENERATED_PASSAGES = (
    "results/generated/{dataset}/passages/shard{shard}-of{shards}.jsonl"
)
GENERATED_RATINGS = "results/generated/{dataset}/ratings/shard{shard}-of{shards}.jsonl"
GENERATED_REFERENCE_RATINGS = (
    "results/generated/{dataset}/ratings/reference.shard{shard}-of{shards}.jsonl"
)


# The holes in the judgments (rules/judgments.smk, judge_holes): per dataset of holes, the
# passages in the top k of its runs that no original rating rates, rated in llm.shards jobs;
# the judgments and the metrics read them beside the dataset's ratings.
HOLES = config["holes"]
JUDGED = "results/judged/{dataset}/shard{shard}-of{shards}.jsonl"
HOLES_LLM = LLMRole(
    LLM, lambda wc: HOLES[wc.dataset]["backend"] or llm_backend_name(wc)
)


def holes_systems(dataset):
    """The systems whose top k is judged: holes.<dataset>.runs, else the first stages."""
    runs = HOLES[dataset]["runs"]
    return list(RETRIEVERS if runs is None else runs)


def holes_runs(wildcards):
    """Input function: the run files of the judged systems, in their order."""
    d = wildcards.dataset
    return [
        run_file(SimpleNamespace(dataset=d, system=system, eta=ETA))
        for system in holes_systems(d)
    ]


def judged_files(wildcards):
    """Input function: the added ratings of the dataset's holes (none without holes)."""
    if wildcards.dataset not in HOLES:
        return []
    return shard_files(JUDGED)(wildcards)


# RAG generation and the paper's tables (rules/rag.smk).
RAG = config["rag"]
RAG_SIZES = [str(k) for k in RAG["context_sizes"]]
SAMPLES = RAG["samples"]
SAMPLE_IDS = [f"s{i:02d}" for i in range(SAMPLES["n"])]
SAMPLE_SYSTEM = re.compile(
    "(" + "|".join(map(re.escape, RETRIEVERS)) + r")\.s\d+" if RETRIEVERS else "(?!)"
)
# The sizes k whose context files context_metrics writes (the metrics' and the RAG stage's),
# and the systems it scores; a sampled system's contexts come from the rule contexts.
CONTEXT_FILE_SIZES = list(dict.fromkeys([*CONTEXT_SIZES, *RAG_SIZES]))
SCORED_SYSTEM = "|".join(
    map(
        re.escape,
        sorted({s for d in DATASETS for s in systems(d)}, key=len, reverse=True),
    )
)
GENERATOR_LLM = LLMRole(LLM, lambda wc: RAG["generator"] or LLM["backend"])
JUDGE_LLM = LLMRole(LLM, lambda wc: RAG["judge"] or llm_backend_name(wc))


def rag_systems(dataset):
    """The systems whose contexts feed the generator (#3 oracle first; no #1 and #2 here)."""
    return workflow_config.rag_systems(config, dataset)


def rag_pairs(dataset, which):
    """(system, k) of every report of a set: "main" (Tables 1-3) or "samples" (Figure 5)."""
    return workflow_config.rag_pairs(config, dataset, which)


def all_targets():
    targets = [f"results/data/{d}/manifest.json" for d in DATASETS]
    evaluated = [d for d in RATED if DATASETS[d]["evaluate"]]
    targets += [f"results/metrics/{d}/eta{ETA}/context_metrics.md" for d in evaluated]
    targets += [
        f"results/contexts/{d}/eta{ETA}/{s}.k{k}.jsonl"
        for d in evaluated
        for s in systems(d)
        for k in CONTEXT_SIZES
    ]
    if RAG["datasets"]:
        targets += rag_targets()
    targets += [
        f"results/agreement/{d}/eta{ETA}/judge_precision_recall.tsv"
        for d in RATED
        if DATASETS[d]["human_labels"]["passages"]
    ]
    targets += beyond_targets()
    return targets


def reranker_env(wildcards):
    """The conda environment of a reranker's job, by its kind (cruxflow/rerank/registry.py)."""
    return f"../envs/{reranker_registry.conda_env(RERANKERS[wildcards.reranker], LLM)}"


# --- RAG, tables and agreement (rules/rag.smk)


def rag_generate_inputs(wildcards):
    inputs = {
        **dataset_files(),
        **rag_topic_list(wildcards.dataset),
        "collection": collection(wildcards),
        "judgments": "results/judgments/{dataset}/eta{eta}/judgments.jsonl".format(
            **wildcards
        ),
    }
    if wildcards.system != names.DIRECT:
        inputs["contexts"] = (
            "results/contexts/{dataset}/eta{eta}/{system}.k{k}.jsonl".format(
                **wildcards
            )
        )
    return inputs


def rag_topic_list(dataset):
    """rag.topics' file of a dataset as a rule input (none when it has no list)."""
    path = RAG["topics"].get(dataset)
    return (
        {}
        if path is None
        else {"topic_list": workflow_config.locate(path, workflow.basedir)}
    )


def rag_metrics_inputs(wildcards):
    pairs = rag_pairs(wildcards.dataset, wildcards.which)
    d, eta = wildcards.dataset, wildcards.eta
    return {
        **dataset_files(),
        "judged": judged_files(wildcards),
        **rag_topic_list(d),
        "collection": collection(wildcards),
        "contexts": [
            f"results/contexts/{d}/eta{eta}/{s}.k{k}.jsonl"
            for s, k in pairs
            if s != names.DIRECT
        ],
        "reports": [
            f"results/rag/{d}/eta{eta}/reports/{s}.k{k}.jsonl" for s, k in pairs
        ],
        "ratings": [
            f"results/rag/{d}/eta{eta}/ratings/{s}.k{k}.jsonl" for s, k in pairs
        ],
    }


TABLES = "results/tables"
TABLE_CAPTIONS = {
    "table1": "Retrieval contexts Z and their RAG results y (gray in the paper): Cov(Z), "
    "alpha-nDCG (published computation: ndeval@20, ideal over P*), alpha-nDCG (Eq. 4: ideal "
    "over Z*), Cov(y), Den(Z), Den(y) x 100 at k = |Z*|; bold best, underlined worst "
    "pipeline; last row Kendall tau between context and final metrics over the pipelines.",
    "table2": "Coverage at answerability thresholds eta: mean (sd) over the pipelines of "
    "Cov(y) and Cov(Z) x 100, and Kendall tau between them (the paper's eta = 3 row swaps "
    "the two: see the notes).",
    "table3": "Kendall tau between intermediate and final metrics by context size k: columns "
    "2-7 against Cov(y), the last Den(Z) against Den(y).",
}


def rag_targets():
    targets = [
        f"{TABLES}/{t}.md" for t in ("table1", "table2", "table3", "significance")
    ]
    if SAMPLE_IDS and RETRIEVERS:
        targets += [
            f"results/figures/{d}/eta{ETA}/figure5.png" for d in RAG["datasets"]
        ]
    for d in RAG["datasets"]:
        if human_labels(d, "reports"):
            targets.append(f"results/agreement/{d}/eta{ETA}/figure4.png")
    return targets


# --- metrics beyond CRUX on the user's own files (rules/beyond.smk) -----------------------------

BEYOND = config["beyond"]
BEYOND_LLM = LLMRole(LLM, lambda wc: BEYOND["backend"] or LLM["backend"])
# The files each job writes: the first is the rule's main output.
BEYOND_OUTPUTS = {
    "udcg": ("summary.json", "contexts.tsv", "passages.jsonl"),
    "support": ("summary.json", "per_run.tsv", "per_topic.tsv", "labels.jsonl"),
    "kpr": ("summary.json", "per_question.tsv", "grouped.tsv", "key_points.jsonl"),
}


# Each job's main input, named as the flag of its command (cruxflow/cli/vocabulary.py).
BEYOND_INPUT = workflow_config.BEYOND_INPUT


def beyond_job(metric):
    """Input function: the job's input files (those its options name)."""

    def inputs(wildcards):
        job = BEYOND[metric][wildcards.name]
        keys = (
            BEYOND_INPUT[metric],
            "labels",
            "passages",
            "topics",
            "key_points",
            "theta",
            "fit_theta",
        )
        return {k: job[k] for k in keys if job.get(k)}

    return inputs


def beyond_options(metric):
    """Params function: the job's options, without its files."""
    files = {
        BEYOND_INPUT[metric],
        "labels",
        "passages",
        "topics",
        "key_points",
        "theta",
        "fit_theta",
    }
    return lambda wc: {
        k: v for k, v in BEYOND[metric][wc.name].items() if k not in files
    }


def beyond_targets():
    return [
        f"results/beyond/{metric}/{name}/summary.json"
        for metric in BEYOND_OUTPUTS
        for name in BEYOND[metric]
    ]


def human_labels(dataset, kind):
    return DATASETS[dataset]["human_labels"][kind]

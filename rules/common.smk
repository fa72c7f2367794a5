# Shared by all rule files. Config validation (the schema fills in every default, also
# inside each dataset entry) and the functions that list targets and inputs.

import os

from snakemake.utils import validate

validate(config, "../cruxflow/schemas/config.schema.json", set_default=True)

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
# Datasets that arrive with answerability ratings (the CRUX release format); the others get
# them from the LLM stages.
RATED = [name for name, d in DATASETS.items() if d["format"] == "crux"]
REFERENCE_RUNS = ["random", "random-relevant"]


def systems(dataset):
    return ["oracle", *REFERENCE_RUNS, *config["runs"].get(dataset, {})]


def run_file(wildcards):
    if wildcards.system == "oracle":
        return f"results/judgments/{wildcards.dataset}/eta{wildcards.eta}/oracle.run"
    if wildcards.system in REFERENCE_RUNS:
        return f"results/runs/{wildcards.dataset}/{wildcards.system}.run"
    return config["runs"][wildcards.dataset][wildcards.system]


def dataset_files():
    """The files of a dataset directory (see docs/data-model.md), by name."""
    d = "results/data/{dataset}"
    return {
        "topics": f"{d}/topics.jsonl",
        "documents": f"{d}/documents.jsonl",
        "passages": f"{d}/passages/passages.jsonl",
        "answerability": f"{d}/answerability.jsonl",
        "manifest": f"{d}/manifest.json",
    }


def all_targets():
    targets = [f"results/data/{d}/manifest.json" for d in DATASETS]
    targets += [f"results/metrics/{d}/eta{ETA}/context_metrics.md" for d in RATED]
    return targets

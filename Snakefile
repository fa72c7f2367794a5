# cruxflow: CRUX (Ju et al., 2025) end to end as a Snakemake workflow.
# Declares the config, the rule files and the targets; every rule lives in rules/.

from snakemake.utils import min_version

min_version("9.0")

# The config files read strictly before Snakemake reads them (a key given twice, a name YAML
# reads as a boolean, nesting past a bound: one line each): Snakemake's own reader lets the
# last of two keys win and fails on deep nesting with a traceback.
import sys

sys.path.insert(0, workflow.basedir)
from cruxflow.data.errors import DataError
from cruxflow.workflow.config_values import read_config_files

try:
    read_config_files(["config.yaml", *workflow.overwrite_configfiles])
except DataError as e:
    sys.exit(f"cruxflow: invalid config: {e}")


configfile: "config.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"


wildcard_constraints:
    dataset="|".join(map(lambda n: n.replace(".", r"\."), DATASETS)),
    eta=r"[0-5]",
    system=r"[A-Za-z0-9_.+-]+",
    shard=r"\d+",
    shards=r"\d+",
    k=r"oracle|[1-9][0-9]*",
    corpus=r"[A-Za-z0-9_.-]+",
    retriever="bm25|dense|splade",
    name=r"[A-Za-z0-9_.-]+",


include: "rules/ingest.smk"
include: "rules/generate.smk"
include: "rules/retrieval.smk"
include: "rules/rerank.smk"
include: "rules/judgments.smk"
include: "rules/metrics.smk"
include: "rules/rag.smk"
include: "rules/beyond.smk"
include: "rules/plan.smk"


rule all:
    default_target: True
    input:
        all_targets(),

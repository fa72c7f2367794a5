"""The workflow's config beyond what its JSON schema says: the defaults that depend on a
dataset's format, and the checks across keys (a name in one section that must exist in another).

``rules/common.smk`` checks the config (:func:`check`): it validates it against
``cruxflow/schemas/config.schema.json`` with the format registry's dataset keys
(:func:`config_schema`), filling in the schema's defaults as ``snakemake.utils.validate`` does
(:func:`with_defaults`), and then calls :func:`resolve`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from cruxflow.data.errors import ConfigError
from cruxflow.workflow.config_values import (
    NOT_A_NAME,
    cache_problems,
    count_problems,
    key_problems,
    nesting_depth,
    number_problems,
    yaml_text,
)

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.json"

# The main input of each job of the metrics beyond CRUX, named as its command's flag
# (cruxflow/cli/vocabulary/declared.py): udcg and kpr score --questions, support --answers.
BEYOND_INPUT = {"udcg": "questions", "support": "answers", "kpr": "questions"}
# Keys renamed with the command line's flags (old -> new, per metric): an old key is still
# read, with one warning line, by :func:`rename_old_keys`.
RENAMED_KEYS = {"udcg": {"input": "questions", "judge_attempts": "attempts"},
                "support": {"input": "answers", "judge": "judge_pairs"},
                "kpr": {"input": "questions"}}


def rename_old_keys(config: dict, warn=None) -> dict:
    """The beyond jobs' keys renamed with the command line's flags, read under their new names
    (in place), each with one warning; a job that gives both names is left to the schema,
    which refuses the old one."""
    import sys

    warn = warn or (lambda line: print(line, file=sys.stderr))
    beyond = config.get("beyond") if isinstance(config, dict) else None
    for metric, renamed in RENAMED_KEYS.items():
        jobs = beyond.get(metric) if isinstance(beyond, dict) else None
        for name, job in (jobs or {}).items() if isinstance(jobs, dict) else ():
            if not isinstance(job, dict):
                continue
            for old, new in renamed.items():
                if old in job and new not in job:
                    job[new] = job.pop(old)
                    warn(f"cruxflow: warning: beyond.{metric}.{name}.{old} is now "
                         f"beyond.{metric}.{name}.{new} (the flag --{new.replace('_', '-')})")
    return config


@cache
def config_schema() -> dict:
    """The workflow config's JSON schema, read once: cruxflow/schemas/config.schema.json with
    the dataset entry's keys that the format registry declares (``format``, ``input``, every
    option of reading) filled in from it, their one home."""
    from cruxflow.data.ingest.formats import schema_with_registry

    return schema_with_registry(json.loads(SCHEMA.read_text()))


def with_defaults(config: dict, schema: dict | None = None) -> dict:
    """Validate ``config`` against the schema and fill in its defaults, in place, as
    ``snakemake.utils.validate(config, schema, set_default=True)`` does: a default is set before
    its object is validated, so the defaults inside a defaulted object are filled in too."""
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import best_match

    validate_properties = Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if "default" in subschema:
                    # A copy: Snakemake shares the schema's object between every entry it fills.
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from validate_properties(validator, properties, instance, schema)

    filling = validators.extend(Draft202012Validator, {"properties": set_defaults})
    found: dict[str, str] = {}
    # Every problem once, under its key, in one line each: not the whole schema (Snakemake's
    # validate prints it), and not only the first, so one edit fixes them all.
    for error in sorted(filling(schema or config_schema()).iter_errors(config),
                        key=lambda e: list(map(str, e.absolute_path))):
        key = ".".join(map(str, error.absolute_path)) or "(top level)"
        if key not in found:
            found[key] = _one_line(best_match([error]) or error)
    if found:
        raise ConfigError(list(found.items()))
    return config


def _one_line(error) -> str:
    """A schema error's message, short: a long instance (a whole section) is cut; a boolean or
    a number where a string belongs says why YAML read it so."""
    message = " ".join(error.message.split())
    message = message if len(message) <= 200 else message[:197] + "..."
    wanted = error.validator_value if error.validator == "type" else None
    if (wanted == "string" or isinstance(wanted, list) and "string" in wanted) \
            and isinstance(error.instance, bool | int | float):
        message += f" ({NOT_A_NAME}: '{yaml_text(error.instance)}')"
    return message


# --- format-dependent defaults and derived lists


def fill_format_defaults(config: dict) -> dict:
    """A dataset's ``generate``, ``n_questions`` and ``prefix`` when null: formats that come
    without ratings run the LLM stages (the CRUX release and nuggets come rated; the format
    registry, :mod:`cruxflow.data.ingest.formats`, says which), the paper asks for 15
    sub-questions on DUC 2004, 10 on Multi-News (Sec. 3.1), and the topic prefix is the
    format's."""
    from cruxflow.data.ingest.formats import FORMATS

    for name, d in config["datasets"].items():
        fmt = FORMATS[d["format"]]
        if d["generate"] is None:
            d["generate"] = not fmt.rated
        if d["n_questions"] is None:
            d["n_questions"] = 15 if d["format"] == "duc2004" else 10
        if d.get("prefix") is None:
            d["prefix"] = fmt.prefix
        # the authors' Researchy way rates the pool of the first stages' top k: its holes
        holes = config.setdefault("holes", {})
        if d.get("questions_from") == "request" and name not in holes:
            holes[name] = with_defaults({}, config_schema()["properties"]["holes"][
                "additionalProperties"])
    return config


def use_annotation_exports(config: dict) -> dict:
    """``human_labels.annotations``, a ``cruxflow annotate --export`` folder, gives a dataset's
    null ``reports`` / ``passages`` the export files it holds. Looked up when the config is
    resolved, so labels exported later are used by the next run, and none are needed before."""
    from cruxflow.annotate.export import EXPORT_FILES

    for d in config["datasets"].values():
        labels = d["human_labels"]
        if labels.get("annotations") is None:
            continue
        for key, task in (("reports", "reports"), ("passages", "ratings")):
            path = Path(labels["annotations"]) / EXPORT_FILES[task]
            if labels[key] is None and path.is_file():
                labels[key] = str(path)
    return config


def rated_datasets(config: dict) -> list[str]:
    """Datasets with answerability ratings: of a format that comes rated, or generated."""
    from cruxflow.data.ingest.formats import FORMATS

    return [name for name, d in config["datasets"].items()
            if FORMATS[d["format"]].rated or d["generate"]]


def corpora(config: dict) -> dict[str, list[str]]:
    """Knowledge corpora by name, with their member datasets: the shared ones of ``corpora``,
    and one per dataset that names none (it retrieves from its own passages)."""
    out = {name: list(c["datasets"]) for name, c in config["corpora"].items()}
    for name, d in config["datasets"].items():
        if d["corpus"] is None:
            out[name] = [name]
    return out


def retrievers(config: dict) -> list[str]:
    """The first stages that run: learned-sparse retrieval only when it names a model."""
    retrieval = config["retrieval"]
    return [r for r in retrieval["retrievers"]
            if r != "splade" or retrieval["splade"]["model"] is not None]


def pipelines(config: dict) -> list[str]:
    """The second stages' systems ``<retriever>+<reranker>``: every reranker over every first
    stage that runs, or over those its ``retrievers`` option names."""
    return [f"{r}+{x}" for r in retrievers(config)
            for x, spec in config["retrieval"]["rerankers"].items()
            if spec.get("retrievers") is None or r in spec["retrievers"]]


def rag_systems(config: dict, dataset: str) -> list[str]:
    """The systems whose contexts feed the generator (#3 oracle first; no #1 and #2 here)."""
    from cruxflow.data import names

    baselines = list(names.REFERENCE_RUNS) if config["rag"]["baselines"] else []
    return [names.ORACLE, *baselines, *retrievers(config), *pipelines(config),
            *config["runs"].get(dataset, {})]


def rag_pairs(config: dict, dataset: str, which: str) -> list[tuple[str, str]]:
    """(system, k) of every report of a set: "main" (Tables 1-3) or "samples" (Figure 5)."""
    from cruxflow.data import names

    rag = config["rag"]
    if which == "samples":
        ids = [f"s{i:02d}" for i in range(rag["samples"]["n"])]
        return [(f"{r}.{s}", str(rag["samples"]["size"])) for r in retrievers(config)
                for s in ids]
    pairs = [(s, str(k)) for s in rag_systems(config, dataset) for k in rag["context_sizes"]]
    return [(names.DIRECT, names.ORACLE_K), *pairs]


def locate(path: str, basedir) -> str:
    """A file path of the config: as given when it exists (relative to the working directory)
    or is absolute, else the same relative path under ``basedir`` (the workflow's directory)
    when it exists there, so that files shipped with the workflow (the paper's topic lists
    under presets/) are found from any working directory; else as given, for Snakemake to
    report missing."""
    p = Path(path)
    if p.is_absolute() or p.exists():
        return str(path)
    shipped = Path(basedir) / p
    return str(shipped) if shipped.exists() else str(path)


def parity_settings(config: dict) -> dict:
    """The settings on which the paper's numbers depend and in which cruxflow's default and the
    CRUX authors' code differ (docs/paper-parity.md), from a resolved config: recorded in the
    manifests beside the tables, with the token counter."""
    metrics, llm, rag = config["metrics"], config["llm"], config["rag"]
    return {
        "metrics": {k: metrics[k] for k in ("eta", "alpha", "density_weight", "tokenizer",
                                            "relevance_grades")},
        "alpha_nDCG_columns": {
            "alpha_nDCG_published": "published computation: ndeval alpha-nDCG@20 of the "
                                    "top-k context, ideal over P*",
            "alpha_nDCG_crux": "Eq. 4: ideal over Z*",
            "alpha_nDCG": "ir_measures' alpha_nDCG@k (ndeval), ideal over P* at rank k"},
        "ratings": {k: llm["ratings"][k] for k in ("decoding", "free_max_tokens", "layout")},
        "endpoints": {name: spec.get("endpoint", "chat")
                      for name, spec in llm["backends"].items()},
        "passages": {k: llm["passages"][k] for k in ("max_document_words", "chunk_words",
                                                     "max_passages", "distractors")},
        "datasets": {name: {k: d[k] for k in ("prefix", "count_empty_documents",
                                               "chunk_documents", "max_topics")}
                     for name, d in config["datasets"].items()},
        "rag_topics": dict(rag["topics"]),
    }


# --- checks across keys


def _backend_problem(key: str, name: str | None, config: dict) -> Iterator[tuple[str, str]]:
    llm = config["llm"]
    if (name or llm["backend"]) not in llm["backends"]:
        where = "" if name else f" (llm.backend, as {key} is null)"
        yield key, f"no backend {name or llm['backend']!r}{where} in llm.backends"


def _dataset_problems(config: dict) -> Iterator[tuple[str, str]]:
    from cruxflow.data.ingest import formats

    plain = formats.defaults()
    for name, d in config["datasets"].items():
        key = f"datasets.{name}"
        if d["generate"] and formats.FORMATS[d["format"]].rated:
            yield f"{key}.generate", f"the {d['format']} format comes rated; set generate: false"
        # an option the format does not read: set in vain, it would be skipped in silence (the
        # prefix the format's own, filled in above)
        given = {option: d[option] for option, spec in formats.options().items()
                 if spec.workflow is None and d.get(option) != plain[option]
                 and not (option == "prefix"
                          and d[option] == formats.FORMATS[d["format"]].prefix)}
        for option, why in formats.misapplied(d["format"], given):
            yield f"{key}.{option}", why
        # The dataset's backend writes its data and, with a null rag.judge, judges its reports.
        judged = name in config["rag"]["datasets"] and config["rag"]["judge"] is None
        if d["llm_backend"] is not None or d["generate"] or judged:
            yield from _backend_problem(f"{key}.llm_backend", d["llm_backend"], config)
        if d["corpus"] is not None and d["corpus"] not in config["corpora"]:
            yield f"{key}.corpus", f"no corpus {d['corpus']!r} in corpora"
        if d["human_labels"]["reports"] and name not in config["rag"]["datasets"]:
            yield (f"{key}.human_labels.reports",
                   f"judging reports needs {name} in rag.datasets")
    for name in config["runs"]:
        if name not in config["datasets"]:
            yield f"runs.{name}", f"no dataset {name!r} in datasets"


def _holes_problems(config: dict) -> Iterator[tuple[str, str]]:
    """A dataset of ``holes`` must be rated and evaluated; its runs the dataset's systems that
    do not depend on the judged ratings (the oracle's and the reference runs are made from
    them)."""
    from cruxflow.data import names

    rated = rated_datasets(config)
    for name, spec in config.get("holes", {}).items():
        key = f"holes.{name}"
        if name not in config["datasets"]:
            yield key, f"no dataset {name!r} in datasets"
            continue
        if name not in rated or not config["datasets"][name]["evaluate"]:
            yield key, f"{name!r} is not a rated, evaluated dataset"
        known = [*retrievers(config), *pipelines(config), *config["runs"].get(name, {})]
        for system in spec["runs"] or []:
            if system not in known:
                why = " (its run is made from the judged ratings)" if system in (
                    names.ORACLE, *names.REFERENCE_RUNS) else ""
                yield f"{key}.runs", (f"{system!r} is not a system of {name} whose run can be "
                                      f"judged{why}; known: {', '.join(known)}")
        if spec["runs"] is None and not retrievers(config):
            yield f"{key}.runs", "null names the first stages, and none runs"
        backend = spec["backend"] or config["datasets"][name]["llm_backend"]
        yield from _backend_problem(f"{key}.backend", backend, config)


def _corpus_problems(config: dict) -> Iterator[tuple[str, str]]:
    for name, c in config["corpora"].items():
        if name in config["datasets"]:
            yield f"corpora.{name}", f"{name!r} is also a dataset name; pick another"
        for member in c["datasets"]:
            if member not in config["datasets"]:
                yield f"corpora.{name}.datasets", f"unknown dataset {member!r}"


def _rag_problems(config: dict) -> Iterator[tuple[str, str]]:
    rag = config["rag"]
    if not rag["datasets"]:
        return  # the rest of rag is read only for its datasets
    rated = rated_datasets(config)
    for name in rag["datasets"]:
        if name not in rated or not config["datasets"][name]["evaluate"]:
            yield "rag.datasets", f"{name!r} is not a rated, evaluated dataset in datasets"
    sizes = [str(k) for k in config["metrics"]["context_sizes"]]
    for k in rag["context_sizes"]:
        if str(k) not in sizes:
            yield "rag.context_sizes", f"{k} is not in metrics.context_sizes"
    yield from _backend_problem("rag.generator", rag["generator"], config)
    # A null judge is each dataset's own backend, checked with the dataset.
    if rag["judge"] is not None:
        yield from _backend_problem("rag.judge", rag["judge"], config)
    for name in rag["topics"]:
        if name not in rag["datasets"]:
            yield f"rag.topics.{name}", f"{name!r} is not in rag.datasets"


def _passage_problems(config: dict) -> Iterator[tuple[str, str]]:
    # Long documents are cut into chunks of chunk_words (at ingest or in the passage stage):
    # a chunk longer than the limit that triggers the cut would itself be "long".
    stage = config["llm"]["passages"]
    if stage["chunk_words"] > stage["max_document_words"]:
        yield ("llm.passages.chunk_words",
               f"{stage['chunk_words']} is more than max_document_words "
               f"({stage['max_document_words']})")


def _reranker_problems(config: dict) -> Iterator[tuple[str, str]]:
    from cruxflow.rerank import registry

    for name, spec in config["retrieval"]["rerankers"].items():
        yield from registry.problems(name, spec)


def _backend_user_problems(config: dict) -> Iterator[tuple[str, str]]:
    from cruxflow.rerank import registry

    for name, spec in config["retrieval"]["rerankers"].items():
        if spec["kind"] in registry.KINDS and registry.uses_llm_backend(spec):
            key = f"retrieval.rerankers.{name}.llm_backend"
            yield from _backend_problem(key, spec.get("llm_backend"), config)
    beyond = config["beyond"]
    if any(beyond[metric] for metric in ("udcg", "support", "kpr")):
        yield from _backend_problem("beyond.backend", beyond["backend"], config)


def _llm_problems(config: dict) -> Iterator[tuple[str, str]]:
    """A served backend's URL by the rule the CLI's --base-url applies (check_base_url)."""
    from cruxflow.llm.openai_compat import check_base_url

    for name, spec in config["llm"]["backends"].items():
        if spec.get("kind") == "openai":
            if problem := check_base_url(spec.get("base_url", "")):
                yield f"llm.backends.{name}.base_url", problem


def file_problems(config: dict, basedir=".", *,
                  data_optional: bool = False) -> list[tuple[str, str]]:
    """The files and folders the config names that are not there, each under its key (found
    as :func:`locate` finds them): Snakemake would report them as a rule's missing input.
    ``data_optional``: what a user brings may be missing (the datasets' inputs and the files
    their options name, the tokenizer): ``cruxflow plan`` plans before they exist and says what
    it assumed."""
    from cruxflow.data.ingest import formats

    brought: list[tuple[str, str | None]] = []   # what a user brings: may be missing for plan
    for name, d in config["datasets"].items():
        brought.append((f"datasets.{name}.input", d.get("input")))
        for option, spec in formats.options().items():
            value = d.get(option) if spec.workflow is None else None
            if spec.kind == "path":
                brought.append((f"datasets.{name}.{option}", value))
            elif spec.kind == "paths" and value:
                values = [value] if isinstance(value, str) else value
                brought += [(f"datasets.{name}.{option}[{i}]", v) for i, v in enumerate(values)]
    named: list[tuple[str, str | None]] = [] if data_optional else list(brought)
    for dataset, runs in config["runs"].items():
        named += [(f"runs.{dataset}.{run}", path) for run, path in runs.items()]
    for metric, key in BEYOND_INPUT.items():
        for job, spec in config["beyond"][metric].items():
            named.append((f"beyond.{metric}.{job}.{key}", spec.get(key)))
    if not data_optional:
        named.append(("metrics.tokenizer", config["metrics"].get("tokenizer")))
    for name, d in config["datasets"].items():
        labels = d.get("human_labels") or {}
        named += [(f"datasets.{name}.human_labels.{k}", labels.get(k))
                  for k in ("reports", "passages")]
    out = []
    files = ("runs.", "beyond.")   # read as one file each: a folder there would be dropped late
    inputs: list[tuple[str, Path]] = []
    for key, path in named:
        if not (isinstance(path, str) and path):
            continue
        found = Path(locate(path, basedir))
        inputs.append((key, found))
        if not found.exists():
            out.append((key, f"no such file or directory: {path}"))
        elif key.startswith(files) and not found.is_file():
            out.append((key, f"is a folder or a special file, expected a file: {path}"))
        elif key == "metrics.tokenizer" and found.is_dir() \
                and not (found / "tokenizer.json").is_file():
            out.append((key, f"a folder without tokenizer.json: {path}"))
    for name, d in config["datasets"].items():
        folder = (d.get("human_labels") or {}).get("annotations")
        if isinstance(folder, str) and folder and Path(locate(folder, basedir)).exists() \
                and not Path(locate(folder, basedir)).is_dir():
            out.append((f"datasets.{name}.human_labels.annotations",
                        f"is a file, expected a `cruxflow annotate --export` folder: {folder}"))
    if data_optional:   # the inputs that are there: no cache may be one of them
        inputs += [(key, Path(locate(path, basedir))) for key, path in brought
                   if isinstance(path, str) and path and Path(locate(path, basedir)).exists()]
    cache = config["llm"].get("cache")
    if isinstance(cache, str) and cache:
        out += cache_problems(cache, Path(locate(cache, basedir)), inputs)
    return out


def problems(config: dict) -> list[tuple[str, str]]:
    """Every problem across keys of a schema-valid config with its format defaults filled in,
    as (key path, what is wrong)."""
    checks = (number_problems, count_problems, _dataset_problems, _corpus_problems, _rag_problems,
              _passage_problems, _reranker_problems, _backend_user_problems, _llm_problems,
              _holes_problems)
    return [p for check in checks for p in check(config)]


def resolve(config: dict) -> dict:
    """Fill in the format-dependent defaults of a schema-valid config (in place) and the human
    labels found in annotation exports, and check it across keys; :class:`ConfigError` lists
    every problem, each under its key path."""
    fill_format_defaults(config)
    use_annotation_exports(config)
    found = problems(config)
    if found:
        raise ConfigError(found)
    return config


def check(config: dict, basedir=".", *, data_optional: bool = False) -> dict:
    """The one check of a workflow config, made by ``cruxflow plan`` and by the workflow before
    Snakemake builds its DAG: the schema (defaults filled in, in place), the checks across keys
    and the files it names. :class:`ConfigError` lists every problem under its key path."""
    if not isinstance(config, dict):
        raise ConfigError([("(top level)", "expected a mapping of sections (datasets:, ...)")])
    from cruxflow.data.io import MAX_YAML_DEPTH, MAX_YAML_VALUES, expanded_size

    if nesting_depth(config, MAX_YAML_DEPTH) > MAX_YAML_DEPTH:   # before anything recurses
        raise ConfigError([("(top level)", f"nested more than {MAX_YAML_DEPTH} deep (mappings "
                                           "or lists inside each other)")])
    if expanded_size(config) > MAX_YAML_VALUES:  # before the schema walks it for minutes
        raise ConfigError([("(top level)", f"its YAML aliases expand to more than "
                                           f"{MAX_YAML_VALUES:,} values (an alias bomb?)")])
    if keys := list(key_problems(config)):   # before the schema, whose patterns skip them
        raise ConfigError(keys)
    rename_old_keys(config)
    with_defaults(config)
    if "datasets" not in config:   # the schema leaves it to the merged config files
        raise ConfigError([("datasets", "missing: the config names no dataset to evaluate")])
    fill_format_defaults(config)
    use_annotation_exports(config)
    found = problems(config) + file_problems(config, basedir, data_optional=data_optional)
    if found:
        raise ConfigError(found)
    return config

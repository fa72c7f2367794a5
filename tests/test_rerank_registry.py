"""The reranker registry: the schema, the rules and the factory agree with it."""

import json
import re
from pathlib import Path

import pytest
import yaml

from cruxflow.data.errors import ConfigError
from cruxflow.rerank import registry
from cruxflow.rerank.factory import make_reranker
from cruxflow.workflow import config as workflow_config

REPO = Path(__file__).resolve().parents[1]


def reranker_schema() -> dict:
    schema = json.loads((REPO / "cruxflow/schemas/config.schema.json").read_text())
    return schema["properties"]["retrieval"]["properties"]["rerankers"]["additionalProperties"]


def test_schema_kind_enum_is_the_registry():
    enum = reranker_schema()["properties"]["kind"]["enum"]
    assert sorted(enum) == sorted(registry.KINDS), (
        "cruxflow/schemas/config.schema.json's retrieval.rerankers kind enum must list the "
        f"registry's kinds: add {sorted(set(registry.KINDS) - set(enum))}, "
        f"remove {sorted(set(enum) - set(registry.KINDS))}")


def test_schema_options_are_the_registry_options():
    props = set(reranker_schema()["properties"])
    options = {o for k in registry.KINDS.values() for o in k.options} | set(registry.COMMON)
    assert options - props == set(), f"add these options to the schema: {options - props}"
    assert props - options == set(), f"no registered kind takes these options: {props - options}"


def test_each_environment_has_a_rule_and_every_kind_one_environment():
    text = (REPO / "rules/rerank.smk").read_text()
    used = re.findall(r'rerankers_in_env\("(\w+)"\)', text)
    assert sorted(used) == sorted(registry.ENVS)
    assert {k.env for k in registry.KINDS.values()} <= set(registry.ENVS)


def test_unknown_kind_names_the_known_kinds():
    known = ", ".join(registry.KINDS)
    with pytest.raises(ValueError, match=re.escape(f"unknown reranker kind 'rrf' (known kinds: "
                                                   f"{known})")):
        make_reranker({"kind": "rrf", "model": "m"})
    assert registry.problems("x", {"kind": "rrf"}) == [
        ("retrieval.rerankers.x.kind", "unknown reranker kind 'rrf' (known kinds: "
         + ", ".join(registry.KINDS) + ")")]
    # The config check, as Snakemake and the CLI run it: the schema's enum names them too.
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["retrieval"]["rerankers"] = {"x": {"kind": "rrf"}}
    with pytest.raises(ConfigError, match="lancer"):
        workflow_config.with_defaults(config)


def test_options_of_another_kind_and_a_missing_model_are_named():
    found = registry.problems("m", {"kind": "mmr", "window": 20})
    assert found == [
        ("retrieval.rerankers.m", "option(s) window do not apply to kind 'mmr' "
                                  "(its options: lambda, relevance, batch_size)"),
        ("retrieval.rerankers.m.model", "kind 'mmr' needs a model")]
    assert registry.problems("l", {"kind": "lancer", "tau": 2, "gpus": 0}) == []


def test_conda_env_by_kind_and_backend():
    llm = {"backend": "small", "backends": {"small": {"kind": "llamacpp"},
                                            "big": {"kind": "vllm"}}}
    assert registry.conda_env({"kind": "mmr"}, llm) == "rerank.yaml"
    assert registry.conda_env({"kind": "lancer"}, llm) == "llm.yaml"
    assert registry.conda_env({"kind": "lancer", "llm_backend": "big"}, llm) == "vllm.yaml"
    assert registry.conda_env({"kind": "listwise", "engine": "rank_llm"}, llm) == "rank_llm.yaml"
    # every environment a kind of an environment may choose is among its rule's
    assert registry.possible_envs("llm")[:2] == ["llm.yaml", "vllm.yaml"]
    assert "rank_llm.yaml" in registry.possible_envs("llm")
    for env in registry.ENVS:
        assert registry.kinds_in_env(env) == [n for n, k in registry.KINDS.items()
                                              if k.env == env]
        assert {f"{a}.yaml" for n in registry.kinds_in_env(env)
                for a in registry.KINDS[n].alt_envs} <= set(registry.possible_envs(env))


def test_every_kind_has_what_it_needs():
    """Each entry of the registry: its builder is a function of an existing module (read from
    the source, nothing imported), its extra is one pyproject.toml declares, its environments
    exist under envs/, and its options are config keys (identifiers, none of the common
    ones)."""
    import ast
    import importlib.util
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for name, k in registry.KINDS.items():
        module, _, function = k.builder.partition(":")
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin, f"{name}: no module {module}"
        tree = ast.parse(Path(spec.origin).read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == function for n in tree.body), (
            f"{name}: {module} defines no function {function}")
        assert k.extra in extras, f"{name}: pyproject.toml has no extra {k.extra!r}"
        assert k.env in registry.ENVS
        for env in (k.env, *k.alt_envs):
            assert (REPO / "envs" / f"{env}.yaml").is_file(), f"{name}: no envs/{env}.yaml"
        assert all(o.isidentifier() and o not in registry.COMMON for o in k.options), name


def test_defaults_fill_only_what_the_spec_leaves_out():
    mmr = registry.kind("mmr")
    assert mmr.with_defaults({"kind": "mmr", "lambda": 0.7}) == {
        "kind": "mmr", "lambda": 0.7, "relevance": "cosine", "batch_size": 64}


def test_the_guide_example_registers_and_reranks(monkeypatch):
    """docs/adding-a-reranker.md's module and registry line, run as written."""
    import sys
    import types

    from cruxflow.rerank import rerank_run

    doc = (REPO / "docs/adding-a-reranker.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    module_code = next(b for b in blocks if "def from_spec" in b)
    line = next(b for b in blocks if b.strip().startswith("Kind("))
    module = types.ModuleType("cruxflow.rerank.overlap")
    exec(module_code, module.__dict__)
    monkeypatch.setitem(sys.modules, "cruxflow.rerank.overlap", module)
    entry = eval(line.strip().rstrip(","), vars(registry))
    monkeypatch.setitem(registry.KINDS, entry.name, entry)

    assert registry.problems("o", {"kind": "overlap"}) == []
    reranker = make_reranker({"kind": "overlap"})
    run = {"q": [("a", 3.0), ("b", 2.0), ("c", 1.0), ("d", 0.5)]}
    # Query words of 3+ characters: flood, the, river, town.
    texts = {"a": "The weather was fine.",                         # the: 1
             "b": "Flood waters rose in the river town.",           # all four: 4
             "c": "A river flood.",                                 # river, flood: 2
             "d": "Town council met."}                              # town: 1 (tie with a)
    out = rerank_run(run, {"q": "Flood in the river town"}, texts, reranker)
    assert [d for d, _ in out["q"]] == ["b", "c", "a", "d"]
    assert [s for _, s in out["q"]] == [4.0, 2.0, 1.0, 1.0]
    # min_chars 5 keeps flood, river: b 2, c 2 (tie: first-stage order), d 0, a 0
    out = rerank_run(run, {"q": "Flood in the river town"}, texts,
                     make_reranker({"kind": "overlap", "min_chars": 5}))
    assert [d for d, _ in out["q"]] == ["b", "c", "a", "d"]


def test_a_gpu_kind_without_gpus_and_a_missing_dependency_are_named(monkeypatch):
    gpu_only = registry.Kind("big", "cruxflow_no_such_module:from_spec", "rerank", "rerank",
                             needs_gpu=True)
    monkeypatch.setitem(registry.KINDS, "big", gpu_only)
    assert registry.problems("b", {"kind": "big", "model": "m"}) == [
        ("retrieval.rerankers.b.gpus", "kind 'big' needs a GPU: set gpus (1 or more)")]
    assert registry.problems("b", {"kind": "big", "model": "m", "gpus": 1}) == []
    with pytest.raises(ModuleNotFoundError, match=r"reranker kind 'big' needs the 'rerank' "
                       r"extra: pip install 'cruxflow\[rerank\]' \(cruxflow_no_such_module"):
        make_reranker({"kind": "big", "model": "m", "gpus": 1}, device="cpu")


def test_schema_lancer_aggregations_are_the_kinds():
    """The schema's choices of LANCER's aggregation are the ones cruxflow.rerank.lancer
    implements (its home)."""
    from cruxflow.rerank.lancer import AGGREGATIONS

    enum = reranker_schema()["properties"]["aggregation"]["enum"]
    assert enum == list(AGGREGATIONS)

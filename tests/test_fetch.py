"""`cruxflow fetch` (cruxflow/datasets): the registry of the field's sets, downloads checked
file by file, a name wherever a folder or judgments go.

Every download here goes to stand-ins on 127.0.0.1 (tests/hub_standin.py), started and stopped
by the fixtures: the Hugging Face Hub as ``huggingface_hub`` itself talks to it (through
``HF_ENDPOINT``), and a plain mirror for ``CRUXFLOW_MIRROR``, serving fixture trees laid out as
the real repositories are. Expected bytes and checksums come from the fixture files (hashlib
here), expected scores from hand counts (in the tests' docstrings)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import hub_standin as hub
import pytest

import cruxflow
from cruxflow.cli import main
from cruxflow.data.errors import DataError

DUC_RUN = hub.DATA / "crux" / "release" / "crux-mds-duc04" / "run" / "bm25.run"
CAST_RUN = (hub.RELEASED / "coveragebench" / "ranking" / "CAsT-2020" / "Initial-Retrieval"
            / "initial_bm25.run")
RAG24 = f"/mirror/raw.githubusercontent.com/castorini/anserini-tools/{hub.ANSERINI_COMMIT}/"
DUC_HUB = f"/hub/datasets/DylanJHJ/crux/resolve/{hub.commit_of('DylanJHJ/crux')}/crux-mds-duc04/"


@pytest.fixture
def standin():
    with hub.StandIn() as s:
        yield s


@pytest.fixture
def home(tmp_path, monkeypatch, standin):
    """An empty cache, the stand-ins as the hub and the mirror, no registry of the tests'."""
    monkeypatch.setenv("CRUXFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CRUXFLOW_MIRROR", standin.mirror_url)
    monkeypatch.setenv("HF_ENDPOINT", standin.hub_url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)      # the stand-in is on 127.0.0.1
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.delenv("CRUXFLOW_REGISTRY", raising=False)
    return tmp_path / "home"


@pytest.fixture
def pinned(home, tmp_path, monkeypatch):
    """The tests' registry: the fixture excerpts pinned at the real sets' names and sources."""
    monkeypatch.setenv("CRUXFLOW_REGISTRY", str(hub.write_registry(tmp_path / "registry.toml")))
    return home


def _cli(*args: str) -> tuple[int, str, str]:
    """``cruxflow ARGS`` in a process of its own: huggingface_hub reads HF_HUB_OFFLINE (which
    scripts/test.sh sets for the whole suite, and the fixtures unset) when it is imported."""
    done = subprocess.run([sys.executable, "-m", "cruxflow.cli", *args], capture_output=True,
                          text=True, env=dict(os.environ), timeout=300)
    return done.returncode, done.stdout, done.stderr


URL_SETS = {"trec-rag24", "trec-rag25", "trec-rag25-umbrela", "crux-labeling"}


def _fetch(capsys, *names) -> tuple[int, str, str]:
    """``cruxflow fetch NAMES``: here when only plain URLs are fetched (cheaper), else in a
    process of its own (:func:`_cli`)."""
    if not set(names) <= URL_SETS:
        return _cli("fetch", *names)
    code = main(["fetch", *names])
    out, err = capsys.readouterr()
    return code, out, err


def _same_tree(folder: Path, source: Path, files) -> None:
    for rel in files:
        assert (folder / rel).read_bytes() == (source / rel).read_bytes(), rel


# --- the registry -----------------------------------------------------------------------------

def test_list_json_lists_every_set_with_its_files(home, capsys):
    assert main(["fetch", "--list", "--json"]) == 0
    listed = {s["name"]: s for s in json.loads(capsys.readouterr().out)}
    assert {"crux-mds-duc04", "crux-mds-multi_news", "crux-neuclir", "crux-ragtime",
            "crux-biogen", "crux-researchy", "crux-mds-corpus", "crux-corpus",
            "crux-researchy-corpus", "crux-labeling", "trec-rag24", "trec-rag25",
            "trec-rag25-umbrela"} <= set(listed)
    assert {f"coveragebench-{c}" for c in ("cast2020", "fair_ranking_2022", "neuclir_2024",
                                           "rag_2024", "ragtime_2025", "crux_multinews",
                                           "crux_duc04")} <= set(listed)
    rag24 = {f["path"]: f for f in listed["trec-rag24"]["files"]}
    qrels = rag24["qrels/qrels.rag24.test.txt"]
    assert qrels["url"] == ("https://raw.githubusercontent.com/castorini/anserini-tools/"
                            f"{hub.ANSERINI_COMMIT}/qrels/qrels.rag24.test.txt")
    assert (qrels["size"], qrels["checked"]) == (1201033, "bytes")
    assert len(qrels["sha256"]) == 64
    # a passage file of the labeling release: '#' is quoted in its URL
    docs = [f for f in listed["crux-labeling"]["files"] if "#" in f["path"]]
    assert len(docs) == 1931 and "%23" in docs[0]["url"]
    assert listed["crux-mds-duc04"]["files"] == [] and not listed["crux-mds-duc04"]["pinned"]


@pytest.mark.skipif(not os.environ.get("CRUXFLOW_ANSERINI_REPO"),
                    reason="CRUXFLOW_ANSERINI_REPO (a clone of castorini/anserini-tools) "
                           "is not set")
def test_the_trec_rag_files_carry_the_sha256_of_their_bytes_in_the_clone():
    """Each pinned file's size and sha256 against the bytes git has at the pinned commit."""
    from cruxflow.datasets.registry import sets

    repo = os.environ["CRUXFLOW_ANSERINI_REPO"]
    for name in ("trec-rag24", "trec-rag25", "trec-rag25-umbrela"):
        s = sets()[name]
        for f in s.files:
            data = subprocess.run(["git", "-C", repo, "show", f"{s.source.revision}:{f.path}"],
                                  check=True, capture_output=True).stdout
            assert (len(data), hashlib.sha256(data).hexdigest()) == (f.size, f.sha256), f.path


@pytest.mark.skipif(not os.environ.get("CRUXFLOW_LABELING_REPO"),
                    reason="CRUXFLOW_LABELING_REPO (a clone of DylanJoo/crux-labeling) is not set")
def test_the_labeling_release_carries_the_sha256_of_its_bytes_in_the_clone():
    from cruxflow.datasets.registry import sets

    repo = os.environ["CRUXFLOW_LABELING_REPO"]
    s = sets()["crux-labeling"]
    batch = subprocess.run(["git", "-C", repo, "cat-file", "--batch"], check=True,
                           capture_output=True, input="".join(
                               f"{s.source.revision}:{f.path}\n" for f in s.files).encode()
                           ).stdout
    for f in s.files:
        header, _, batch = batch.partition(b"\n")
        size = int(header.split()[2])
        data, batch = batch[:size], batch[size + 1:]
        assert (size, hashlib.sha256(data).hexdigest()) == (f.size, f.sha256), f.path


def test_a_bad_registry_entry_names_the_file_and_the_field(tmp_path, monkeypatch):
    from cruxflow.datasets.registry import read_registry_file

    bad = tmp_path / "mine.toml"
    bad.write_text('[[set]]\nname = "x"\ntitle = "t"\nkind = "trec-qrels"\nlicense = "l"\n'
                   'source = {type = "url", repo = "a/b", revision = "c", url = "https://h/"}\n'
                   'files = [{path = "q.txt", size = 3, sha256 = "abc", checked = "bytes"}]\n')
    with pytest.raises(DataError, match=r"mine\.toml: q\.txt: field 'sha256': not a sha256"):
        read_registry_file(bad)


# --- fetching through the mirror (plain URLs) -------------------------------------------------

def test_a_mirror_fetch_keeps_the_bytes_and_a_second_fetch_needs_no_server(
        pinned, standin, capsys):
    code, out, _ = _fetch(capsys, "trec-rag24", "crux-labeling")
    assert code == 0
    assert f"trec-rag24: {pinned / 'datasets' / 'trec-rag24'} (2 files" in out
    _same_tree(pinned / "datasets" / "trec-rag24", hub.RELEASED / "anserini-tools",
               ["qrels/qrels.rag24.test.txt", "topics/topics.rag24.test.txt"])
    labeling = hub.DATA / "crux" / "labeling_clone"
    _same_tree(pinned / "datasets" / "crux-labeling", labeling, hub.files_below(labeling))
    asked = len(standin.requests)
    assert asked == 2 + len(hub.files_below(labeling))
    standin.stop()
    code, out, _ = _fetch(capsys, "trec-rag24", "crux-labeling")
    assert code == 0 and "trec-rag24: " in out and "verified" in out
    assert len(standin.requests) == asked


def test_a_corrupted_file_is_refused_in_one_line_and_not_kept(pinned, standin, capsys):
    qrels = hub.RELEASED / "anserini-tools" / "qrels" / "qrels.rag24.test.txt"
    data = bytearray(qrels.read_bytes())
    data[10] ^= 1                                        # one bit: the same size
    standin.corrupt[RAG24 + "qrels/qrels.rag24.test.txt"] = bytes(data)
    code, out, err = _fetch(capsys, "trec-rag24")
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("cruxflow: error: trec-rag24: qrels/qrels.rag24.test.txt: sha256 "
                          f"{hashlib.sha256(data).hexdigest()} is not the expected "
                          f"{hashlib.sha256(qrels.read_bytes()).hexdigest()}: refused")
    kept = [p for p in pinned.rglob("*") if p.name.startswith("qrels.rag24")]
    assert kept == []
    standin.corrupt[RAG24 + "qrels/qrels.rag24.test.txt"] = qrels.read_bytes() + b"\n"
    code, _, err = _fetch(capsys, "trec-rag24")
    assert code == 2 and f"{qrels.stat().st_size + 1} bytes, not the " in err
    assert not [p for p in pinned.rglob("*") if p.name.startswith("qrels.rag24")]
    del standin.corrupt[RAG24 + "qrels/qrels.rag24.test.txt"]
    assert _fetch(capsys, "trec-rag24")[0] == 0


def test_a_cut_transfer_is_resumed_from_where_it_stopped(pinned, standin, capsys):
    path = RAG24 + "qrels/qrels.rag24.test.txt"
    standin.cut[path] = 1000
    code, _, err = _fetch(capsys, "trec-rag24")
    assert code == 2 and "qrels/qrels.rag24.test.txt: could not download" in err
    assert "1000 bytes kept" in err and err.count("\n") == 1
    assert not (pinned / "datasets" / "trec-rag24" / "qrels" / "qrels.rag24.test.txt").exists()
    assert _fetch(capsys, "trec-rag24")[0] == 0
    ranges = [r for method, p, r in standin.requests if p == path]
    assert ranges == [None, "bytes=1000-"]
    _same_tree(pinned / "datasets" / "trec-rag24", hub.RELEASED / "anserini-tools",
               ["qrels/qrels.rag24.test.txt"])


# --- fetching from the hub (huggingface_hub through HF_ENDPOINT) ------------------------------

def test_a_hub_fetch_keeps_the_bytes_refuses_a_corrupted_file_and_works_offline(
        pinned, standin, capsys):
    duc = hub.HUB_REPOS["DylanJHJ/crux"] / "crux-mds-duc04"
    judge = "judge/ratings.Llama-3.1-70B-Instruct.0-1.jsonl"
    data = bytearray((duc / judge).read_bytes())
    data[-3] ^= 1
    standin.corrupt[DUC_HUB + judge] = bytes(data)
    code, _, err = _fetch(capsys, "crux-mds-duc04")
    assert code == 2 and err.count("\n") == 1
    assert f"crux-mds-duc04: {judge}: sha256 {hashlib.sha256(data).hexdigest()}" in err
    assert not list(pinned.rglob("ratings.Llama-3.1-70B-Instruct.0-1.jsonl"))
    del standin.corrupt[DUC_HUB + judge]
    code, out, _ = _fetch(capsys, "crux-mds-duc04")
    assert code == 0 and "crux-mds-duc04: " in out
    _same_tree(pinned / "datasets" / "crux-mds-duc04", duc, hub.files_below(duc))
    # asked through huggingface_hub's own routes, at the pinned commit
    assert any(m == "HEAD" and p.startswith(DUC_HUB) for m, p, _ in standin.requests)
    standin.stop()
    assert _fetch(capsys, "crux-mds-duc04")[0] == 0


def test_pin_takes_the_hubs_listing_and_checks_lfs_and_git_files(home, standin, capsys):
    """crux-mds-duc04 is not pinned by the registry: --pin lists it on the hub (here the
    stand-in, whose judge/ and .jsonl files are LFS files and the rest git files)."""
    duc = hub.HUB_REPOS["DylanJHJ/crux"] / "crux-mds-duc04"
    qrels = "qrels/div_qrels-tau3.txt"                  # a git file: checked by its blob id
    data = bytearray((duc / qrels).read_bytes())
    data[0] ^= 1
    standin.corrupt[DUC_HUB + qrels] = bytes(data)
    code, _, err = _cli("fetch", "--pin", "crux-mds-duc04")
    assert code == 2
    assert f"crux-mds-duc04: {qrels}: git blob id " in err and "is not the hub's" in err
    del standin.corrupt[DUC_HUB + qrels]
    code, out, _ = _cli("fetch", "--pin", "crux-mds-duc04")
    assert code == 0 and f"pinned at {hub.commit_of('DylanJHJ/crux')} (7 files" in out
    from cruxflow.datasets.registry import get

    pin = get("crux-mds-duc04")
    assert pin.origin == str(home / "pins" / "crux-mds-duc04.toml")
    assert {f.path: f.sha256 for f in pin.files} == {
        rel: hashlib.sha256((duc / rel).read_bytes()).hexdigest()
        for rel in hub.files_below(duc)}
    assert {f.checked for f in pin.files} == {"hub-api"}
    assert _cli("fetch", "crux-mds-duc04")[0] == 0     # a plain fetch now: all verified


def test_pin_says_when_no_file_matches(home, standin, capsys):
    standin.hub["hltcoe/coveragebench"] = hub.DATA / "crux" / "release" / "crux-biogen"
    code, _, err = _cli("fetch", "--pin", "coveragebench-ragtime_2025")
    assert code == 2
    assert "no file of Hugging Face dataset hltcoe/coveragebench" in err and "*ragtime*" in err


# --- a name wherever a folder or judgments go -------------------------------------------------

def test_a_name_not_fetched_is_one_line_naming_the_fetch(pinned, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["evaluate", "--crux-root", "crux-mds-duc04", "--run", str(DUC_RUN)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run `cruxflow fetch crux-mds-duc04` first" in err
    with pytest.raises(DataError, match=r"run `cruxflow fetch trec-rag24` first"):
        cruxflow.evaluate(str(DUC_RUN), "trec-rag24", ["nDCG@10"])
    os.environ.pop("CRUXFLOW_REGISTRY")                 # the real registry: not pinned
    with pytest.raises(DataError, match=r"run `cruxflow fetch --pin crux-mds-duc04` first"):
        cruxflow.evaluate(str(DUC_RUN), "crux-mds-duc04", ["Cov@10"])


def test_a_crux_subset_and_a_coveragebench_config_are_scored_by_name(pinned, capsys):
    """The fixture subset at k = 10, eta = 3 (tests/test_crux_eval.py counts it): topic A
    (duc04-test-0) answers q0 and q1 with its first passage, B (duc04-test-1) q1 then q0
    with its two, C has no answerable question (left out), D is judged and not in the run
    (an empty context): Cov@10 = 1, 1, 0, mean 2/3. The CoverageBench config of the stand-in
    holds the same topics with a label of 1 where the rating is 3 or more: the same values.
    Its cast2020 topic: nuggets 1 (CAR_a) and 2 (CAR_b), run CAR_c, CAR_a, CAR_d: Cov@1 = 0,
    Cov@10 = 1/2; alpha-nDCG_crux@10 = (1/log2 3) / (1 + 1/log2 3) (Z* = CAR_a, CAR_b)."""
    assert _fetch(capsys, "crux-mds-duc04", "crux-mds-corpus", "coveragebench-crux_duc04")[0] == 0
    for judgments in ("crux-mds-duc04", "coveragebench-crux_duc04"):
        frame = cruxflow.evaluate(str(DUC_RUN), judgments, ["Cov@10"])
        assert frame["Cov@10"].to_dict() == {"duc04-test-0": 1.0, "duc04-test-1": 1.0,
                                             "duc04-test-3": 0.0}
    assert main(["evaluate", "--crux-root", "crux-mds-duc04", "--run", str(DUC_RUN),
                 "--k", "10", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["aggregate"][0]["Cov"] == pytest.approx(2 / 3)
    assert main(["evaluate", "--against", "coveragebench-crux_duc04", "--run", str(DUC_RUN),
                 "--measures", "Cov@10", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["aggregate"][0]["Cov@10"] == \
        pytest.approx(2 / 3)
    # the authors' script: paths inside the fetched set read as the fixture's own files
    duc = DUC_RUN.parents[1]
    by = {}
    for qrel, judge in ((str(duc / "qrels" / "div_qrels-tau3.txt"), str(duc / "judge")),
                        ("crux-mds-duc04/qrels/div_qrels-tau3.txt", "crux-mds-duc04/judge")):
        assert main(["crux-eval", "--run", str(DUC_RUN), "--qrel", qrel, "--judge", judge,
                     "--json"]) == 0
        by[qrel] = json.loads(capsys.readouterr().out)["runs"][0]["aggregate"]
    assert len({json.dumps(a, sort_keys=True) for a in by.values()}) == 1
    # a config pinned from the hub's listing, its baseline run scored
    os.environ.pop("CRUXFLOW_REGISTRY")
    assert _cli("fetch", "--pin", "coveragebench-cast2020")[0] == 0
    from cruxflow.datasets import load

    cast = load("coveragebench-cast2020")
    assert cast.questions == {"81_1": ["The motor makes a grinding noise.",
                                       "The door reverses before closing."]}
    run = cast.runs["Initial-Retrieval/initial_bm25"]
    assert run.read_bytes() == CAST_RUN.read_bytes()
    frame = cruxflow.evaluate(run, "coveragebench-cast2020",
                              ["Cov@1", "Cov@10", "alpha_nDCG_crux@10"])
    assert frame.loc["81_1", "Cov@1"] == 0.0 and frame.loc["81_1", "Cov@10"] == 0.5
    ideal = 1 + 1 / math.log2(3)
    assert frame.loc["81_1", "alpha_nDCG_crux@10"] == pytest.approx((1 / math.log2(3)) / ideal)


def test_load_and_ir_datasets_give_topics_questions_qrels(pinned, capsys):
    assert _fetch(capsys, "crux-mds-duc04", "trec-rag24")[0] == 0
    from cruxflow.datasets import load

    duc = load("crux-mds-duc04")
    assert duc.topics["duc04-test-1"] == "Write a report on the dock workers' strike."
    assert duc.questions["duc04-test-1"] == ["Why did the workers strike?",
                                             "How long did the strike last?"]
    assert list(duc.runs) == ["bm25"] and duc.collection is None   # its corpus: not fetched
    rag = load("trec-rag24")
    assert rag.topics["2024-224701"] == "why was dame van winkle portrayed so negatively?"
    # ir_datasets in a fresh interpreter: registered when it is imported after cruxflow
    code = ("import sys, cruxflow\nassert 'ir_datasets' not in sys.modules\nimport ir_datasets\n"
            "d = ir_datasets.load('crux/trec-rag24')\n"
            "q = {x.query_id: x.text for x in d.queries_iter()}\n"
            "r = [tuple(x) for x in d.qrels_iter()]\n"
            "g = [tuple(x) for x in ir_datasets.load('crux/crux-mds-duc04').qrels_iter()]\n"
            "print(len(q), len(r), r[0], sorted(x for x in g if x[0] == 'duc04-test-1'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), check=True).stdout.split(" ", 2)
    first = (hub.RELEASED / "anserini-tools" / "qrels" / "qrels.rag24.test.txt").read_text() \
        .splitlines()[0].split()
    assert out[:2] == ["3", "67"]
    assert out[2].startswith(f"('{first[0]}', '{first[2]}', {first[3]}, '{first[1]}')")
    # duc04-test-1's ratings (tests/test_crux_eval.py): 0#0 [4,1], 0#1 [0,5], 1#2 [3,3]
    assert out[2].rstrip().endswith(
        "[('duc04-test-1', 'duc04-test-1:0#0', 1, '1'), ('duc04-test-1', 'duc04-test-1:0#0', 4, "
        "'0'), ('duc04-test-1', 'duc04-test-1:0#1', 0, '0'), ('duc04-test-1', "
        "'duc04-test-1:0#1', 5, '1'), ('duc04-test-1', 'duc04-test-1:1#2', 3, '0'), "
        "('duc04-test-1', 'duc04-test-1:1#2', 3, '1')]")


def test_the_labeling_release_walks_from_fetch_to_a_cov(pinned, capsys):
    """The docs' walk (docs/released-data.md) on the labeling excerpt: the clone's paths are
    the set's, NAME/PATH wherever a path goes."""
    assert _fetch(capsys, "crux-labeling")[0] == 0
    out = Path(os.environ["CRUXFLOW_HOME"]).parent / "labeling"
    assert main(["ingest", "--format", "crux", "--input", "crux-labeling/annotator_1/crux_testb",
                 "--collection", "crux-labeling/annotator_1/documents", "--judge",
                 "crux-labeling/results/annotator1/qrels_a1.jsonl",
                 "crux-labeling/results/annotator2/qrels.jsonl", "--output", str(out)]) == 0
    capsys.readouterr()
    from cruxflow.data.io import read_text
    from cruxflow.datasets import load

    released = load("crux-labeling")
    via_name = cruxflow.evaluate(released.runs["bm25"], "crux-labeling", ["Cov@10"])
    via_dataset = cruxflow.evaluate(released.runs["bm25"], str(out), ["Cov@10"])
    assert via_name["Cov@10"].to_dict() == via_dataset["Cov@10"].to_dict()
    assert read_text(released.runs["bm25"]) == read_text(
        hub.DATA / "crux" / "labeling_clone" / "annotator_1" / "crux_testb" / "bm25.run")


def test_named_paths_keep_their_annotator_name(pinned, capsys):
    from cruxflow.cli.args import named_release_path, release_path

    assert _fetch(capsys, "crux-labeling")[0] == 0
    folder = pinned / "datasets" / "crux-labeling"
    assert named_release_path("ann1=crux-labeling/results/annotator1/qrels_a1.jsonl") == \
        f"ann1={folder / 'results/annotator1/qrels_a1.jsonl'}"
    assert release_path("crux-labeling") == folder
    assert release_path("no/such/thing") == Path("no/such/thing")


# --- TREC RAG qrels as relevance judgments, by every door -------------------------------------

def _run_over(qrels_path: Path, out: Path) -> Path:
    """A run over every judged segment of each topic and two unjudged ones, in an order fixed
    by a hash of the segment id (no ties), written as TREC."""
    by_topic: dict[str, list[str]] = {}
    for line in qrels_path.read_text().splitlines():
        q, _, doc, _ = line.split()
        by_topic.setdefault(q, []).append(doc)
    lines = []
    for q, docs in by_topic.items():
        docs = sorted(docs + [f"unjudged-{q}-a", f"unjudged-{q}-b"],
                      key=lambda d: hashlib.sha1(d.encode()).hexdigest())
        lines += [f"{q} Q0 {d} {i} {100 - i} mine" for i, d in enumerate(docs, 1)]
    out.write_text("\n".join(lines) + "\n")
    return out


@pytest.mark.parametrize("name, qrels, no_relevant", [
    ("trec-rag24", "qrels/qrels.rag24.test.txt", ["2024-133810"]),    # grades 0-3
    ("trec-rag25", "qrels/qrels.rag25.test.txt", []),                 # grades 0-4
])
def test_trec_rag_qrels_are_relevance_judgments_by_every_door(pinned, tmp_path, capsys, name,
                                                              qrels, no_relevant):
    """nDCG@10 and P@10 of a run against the NIST qrels (the excerpt), by cruxflow.evaluate
    (the set's name, or the file as relevance qrels) and by `cruxflow evaluate --against`,
    equal ir_measures' (pytrec_eval's) per topic. The second column of these files is not
    constant (1-5 in the 2024 file): read as diversity qrels it would be sub-topics, so a name
    of a TREC set reads its file as relevance qrels. A topic without a relevant segment
    (2024-133810) scores 0 and counts in the mean, as in ir_measures."""
    import ir_measures
    from ir_measures import P, nDCG

    assert _fetch(capsys, name)[0] == 0
    path = pinned / "datasets" / name / qrels
    run = _run_over(path, tmp_path / "mine.run")
    expected = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(
        [nDCG @ 10, P @ 10], list(ir_measures.read_trec_qrels(str(path))),
        list(ir_measures.read_trec_run(str(run))))}
    kept = sorted({q for q, _ in expected})
    assert set(no_relevant) <= set(kept) and all(expected[(t, "nDCG@10")] == 0 for t in no_relevant)

    def check(per_topic: dict[str, dict[str, float]]):
        assert sorted(per_topic) == kept
        for t in kept:
            for m in ("nDCG@10", "P@10"):
                assert per_topic[t][m] == pytest.approx(expected[(t, m)], abs=1e-12), (t, m)

    for judgments in (name, cruxflow.Judgments(relevance=path)):
        frame = cruxflow.evaluate(run, judgments, ["nDCG@10", "P@10"])
        check(frame.to_dict(orient="index"))
    for against in (name, f"relevance={path}"):
        assert main(["evaluate", "--against", against, "--run", str(run), "--measures",
                     "nDCG@10", "P@10", "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)["per_query"]
        check({r["topic"]: r for r in rows})


def test_agreement_takes_the_trec_rag_sets_by_name(pinned, capsys):
    """`cruxflow agreement --labels NIST=trec-rag25 UMBRELA=trec-rag25-umbrela` reads each
    set's qrels file: the kappas of the 37 (topic, segment) pairs of the excerpt equal
    scikit-learn's on the grades read here from the fixture files. A set whose judgments are
    not one file is refused in one line naming them."""
    from sklearn.metrics import cohen_kappa_score

    assert _fetch(capsys, "trec-rag25", "trec-rag25-umbrela")[0] == 0
    assert main(["agreement", "--labels", "NIST=trec-rag25", "UMBRELA=trec-rag25-umbrela",
                 "--json", "--bootstrap", "300"]) == 0
    (pair,) = json.loads(capsys.readouterr().out)["pairs"]

    def grades(name: str) -> dict[tuple[str, str], int]:
        path = hub.RELEASED / "anserini-tools" / "qrels" / name
        return {(f[0], f[2]): int(f[3]) for f in map(str.split, path.read_text().splitlines())}

    nist, umbrela = grades("qrels.rag25.test.txt"), grades("qrels.rag25.test-umbrela2.txt")
    items = sorted(nist)
    assert len(items) == 37 and pair["n"] == 37
    a, b = [nist[i] for i in items], [umbrela[i] for i in items]
    assert pair["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert pair["kappa_quadratic"] == pytest.approx(     # on the scale of grades 0-4
        cohen_kappa_score(a, b, labels=list(range(5)), weights="quadratic"), abs=1e-12)
    assert sorted(t["topic"] for t in pair["per_topic"]) == ["14", "58"]
    assert _fetch(capsys, "crux-labeling")[0] == 0
    assert main(["agreement", "--labels", "a=crux-labeling", "b=trec-rag25"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "crux-labeling/results/annotator1/qrels_a1.jsonl" in err

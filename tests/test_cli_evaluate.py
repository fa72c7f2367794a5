"""``cruxflow evaluate``: a run or a contexts JSONL scored against a small hand-built dataset."""

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cruxflow.cli import main
from cruxflow.data.model import Dataset, Passage, Topic
from cruxflow.metrics.evaluate import evaluate_run
from cruxflow.metrics.judgments import derive, write_judgments
from cruxflow.metrics.scorer import ContextScorer

CONSOLE_SCRIPT = Path(sys.executable).parent / "cruxflow"


def tiny_dataset() -> Dataset:
    """t: as in test_evaluate (P* = 3 passages, P** = {t:0#0, t:1#2}, Q = q0..q2);
    v: two passages, each answering one question; u: nothing answerable, so never evaluated."""
    topics = {
        "t": Topic("t", "summary t", ["t:0", "t:1"], query="report on x",
                   questions=["q0?", "q1?", "q2?", "q3?"]),
        "v": Topic("v", "summary v", ["v:0"], query="report on v", questions=["p0?", "p1?"]),
        "u": Topic("u", "summary u", ["u:0"], query="report on u", questions=["r0?"]),
    }
    texts = {"t:0#0": "a b c d", "t:0#1": "e f", "t:1#2": "g h i j k l", "x:0#0": "noise",
             "v:0#0": "m n", "v:0#1": "o p q", "u:0#0": "s t"}
    passages = {p: Passage(p, s, p.split(":")[0], p.split("#")[0]) for p, s in texts.items()}
    ratings = {("t", "t:0#0"): [5, 4, 0, 0],     # answers q0, q1
               ("t", "t:0#1"): [3, 0, 0, 0],     # q0 only: redundant with t:0#0
               ("t", "t:1#2"): [0, 0, 5, 1],     # q2; q3 is answered by nobody
               ("v", "v:0#0"): [4, 0],
               ("v", "v:0#1"): [0, 3],
               ("u", "u:0#0"): [1]}              # below eta: u has no answerable question
    return Dataset(topics, {}, passages, ratings)


@pytest.fixture
def data(tmp_path) -> Path:
    d = tmp_path / "data"
    tiny_dataset().save(d)
    return d


def write_contexts(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def write_run_file(path: Path, ranking: dict[str, list[str]]) -> Path:
    # scores deliberately not rank-derived, and lines shuffled: the reader orders by score
    lines = [f"{q} Q0 {p} {i + 1} {10.5 - 2 * i:.2f} mine"
             for q, pids in ranking.items() for i, p in enumerate(pids)]
    path.write_text("\n".join(reversed(lines)) + "\n")
    return path


RANKING = {"t": ["t:0#1", "t:1#2", "x:0#0", "t:0#0"], "v": ["v:0#1", "v:0#0"]}


def run_cli(capsys, *args) -> tuple[int, str, str]:
    rc = main(["evaluate", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_run_and_contexts_give_identical_per_query_values(data, tmp_path, capsys):
    run = write_run_file(tmp_path / "mine.run", RANKING)
    ctx = write_contexts(tmp_path / "mine.jsonl",
                         [{"topic_id": t, "passages": p} for t, p in RANKING.items()])
    for src, flag in ((run, "--run"), (ctx, "--contexts")):
        rc, _, err = run_cli(capsys, "--dataset", data, flag, src, "--k", "oracle", "1", "3", "all",
                             "--output", tmp_path / flag.strip("-"))
        assert rc == 0, err
    a = (tmp_path / "run" / "per_query.tsv").read_text()
    b = (tmp_path / "contexts" / "per_query.tsv").read_text()
    assert a == b and len(a.splitlines()) == 1 + 4 * 2   # header + 4 sizes x 2 judged topics
    assert (tmp_path / "run" / "aggregate.tsv").read_text() == \
        (tmp_path / "contexts" / "aggregate.tsv").read_text()


def test_hand_computed_values_for_a_context(data, tmp_path):
    ctx = write_contexts(tmp_path / "c.jsonl",
                         [{"topic_id": "t", "passages": ["t:0#1", "t:1#2"]}])
    result = evaluate_run(data, contexts=ctx)
    frame = result.per_query.set_index("topic")
    assert list(frame.k.unique()) == ["all"]          # default for contexts: as given
    t = frame.loc["t"]
    assert t.context_size == 2 and t.tokens == 8      # "e f" + "g h i j k l"
    assert t.Cov == pytest.approx(2 / 3)              # q0 and q2 of the answerable q0..q2
    assert t.R == pytest.approx(2 / 3)           # 2 of P* = 3 passages
    assert t["R(rel=2)"] == pytest.approx(1 / 2)  # t:1#2 of P** = {t:0#0, t:1#2}
    # Den: (Cov / tokens) / (Cov* / tokens*) with Z* = "a b c d" + "g h i j k l" (10 tokens)
    assert t.Den == pytest.approx(math.sqrt((2 / 3 / 8) / (1 / 10)))
    # v is judged but absent: an empty context, counted and reported; u is never evaluated
    v = frame.loc["v"]
    assert v.Cov == 0.0 and v.context_size == 0 and not v.in_run
    assert "u" not in frame.index
    assert result.info["missing_in_run"] == ["v"]
    assert result.info["topics_not_evaluated"] == ["u"]
    agg = result.aggregate.iloc[0]
    assert agg.topics == 2 and agg.missing_in_run == 1
    assert agg.Cov == pytest.approx((2 / 3 + 0) / 2)


def test_default_sizes_for_a_run_and_json_output(data, tmp_path, capsys):
    run = write_run_file(tmp_path / "mine.run", RANKING)
    rc, out, err = run_cli(capsys, "--dataset", data, "--run", run, "--json")
    assert rc == 0, err
    result = json.loads(out)
    assert result["system"] == "mine" and result["missing_in_run"] == []
    assert [r["k"] for r in result["aggregate"]] == ["oracle", "10", "20"]
    oracle = result["aggregate"][0]
    # oracle sizes: |Z*| = 2 for t (t:0#1, t:1#2 -> q0, q2) and 2 for v (both passages)
    assert oracle["Cov"] == pytest.approx((2 / 3 + 1) / 2)
    assert oracle["topics"] == 2


def test_text_output_is_a_table(data, tmp_path, capsys):
    ctx = write_contexts(tmp_path / "c.jsonl",
                         [{"topic_id": "t", "context": ["t:0#0", "t:1#2"]}])   # alias key
    rc, out, err = run_cli(capsys, "--dataset", data, "--contexts", ctx, "--run-name", "sys")
    assert rc == 0, err
    # the paper's measures and the judged share (issue 54), each explained under the table
    header = [c.strip() for c in out.splitlines()[0].strip("|").split("|")]
    assert header == ["system", "k", "topics", "Cov", "alpha_nDCG_crux", "Den", "Judged"]
    assert "| sys " in out and "0.5000" in out   # Cov: t fully covered, v missing
    assert "  Judged           Judged(order='score',topics='judged')@k, Judged" in out
    rc, every, _ = run_cli(capsys, "--dataset", data, "--contexts", ctx, "--measures", "all")
    assert [c.strip() for c in every.splitlines()[0].strip("|").split("|")][3:] == [
        "Cov", "alpha_nDCG_crux", "Den", "R", "R(rel=2)", "P", "AP", "nDCG", "alpha_nDCG",
        "alpha_nDCG_published", "Judged"]
    rc, some, _ = run_cli(capsys, "--dataset", data, "--contexts", ctx, "--measures", "nDCG",
                          "R(rel=2)")
    assert "| system | k | topics | nDCG | R(rel=2) |" in some
    assert "1 judged topics not in the input" in out and ": v" in out
    assert "without an answerable question, not evaluated: u" in out


def test_output_writes_both_tables(data, tmp_path, capsys):
    ctx = write_contexts(tmp_path / "c.jsonl", [{"topic_id": "v", "passages": ["v:0#0"]}])
    out_dir = tmp_path / "scores"
    rc, _, err = run_cli(capsys, "--dataset", data, "--contexts", ctx, "--k", "oracle", "all",
                         "--output", out_dir)
    assert rc == 0, err
    assert sorted(p.name for p in out_dir.iterdir()) == ["aggregate.tsv", "per_query.tsv"]
    per_query = pd.read_csv(out_dir / "per_query.tsv", sep="\t", dtype={"k": str})
    assert len(per_query) == 4 and set(per_query.k) == {"oracle", "all"}
    assert per_query.set_index(["k", "topic"]).loc[("all", "v"), "Cov"] == pytest.approx(0.5)
    agg = pd.read_csv(out_dir / "aggregate.tsv", sep="\t", dtype={"k": str})
    assert list(agg.k) == ["oracle", "all"] and list(agg.missing_in_run) == [1, 1]


def test_judgments_file_gives_the_same_scores(data, tmp_path, capsys):
    ds = Dataset.load(data)
    write_judgments(derive(ds, 3), ds, tmp_path / "j", eta=3)
    run = write_run_file(tmp_path / "mine.run", RANKING)
    outs = []
    for extra in ([], ["--judgments", tmp_path / "j" / "judgments.jsonl"]):
        rc, out, err = run_cli(capsys, "--dataset", data, "--run", run, "--json", *extra)
        assert rc == 0, err
        outs.append(json.loads(out)["aggregate"])
    assert outs[0] == outs[1]


def test_judgments_of_another_eta_are_refused(data, tmp_path, capsys):
    ds = Dataset.load(data)
    write_judgments(derive(ds, 5), ds, tmp_path / "j5", eta=5)
    j5 = tmp_path / "j5" / "judgments.jsonl"
    run = write_run_file(tmp_path / "mine.run", {"t": ["t:0#1"], "v": ["v:0#0"]})
    rc, out, err = run_cli(capsys, "--dataset", data, "--run", run, "--judgments", j5)
    assert rc == 2 and out == ""
    assert err == (f"cruxflow: error: {j5}: line 1: field 'eta': derived with eta=5, used with "
                   "eta=3: Q and P** differ between thresholds\n")
    # at eta 5: Q(t) = {q0, q2} (q1's best rating is 4), t:0#1 rates q0 only 3, so Cov 0;
    # v has no rating of 5 and is not evaluated
    rc, out, err = run_cli(capsys, "--dataset", data, "--run", run, "--judgments", j5,
                           "--eta", "5", "--k", "all", "--json")
    assert rc == 0, err
    result = json.loads(out)
    assert result["topics_evaluated"] == 1 and result["aggregate"][0]["Cov"] == 0.0
    # a file from before judgments carried their eta cannot be checked: refused too
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps({k: v for k, v in json.loads(x).items() if k != "eta"})
                           + "\n" for x in j5.read_text().splitlines()))
    rc, _, err = run_cli(capsys, "--dataset", data, "--run", run, "--judgments", old,
                         "--eta", "5")
    assert rc == 2 and "line 1: field 'eta': no eta: written by an older cruxflow" in err


@pytest.mark.parametrize("kind", ["run", "contexts"])
def test_an_empty_input_scores_only_with_allow_empty(data, tmp_path, capsys, kind):
    src = tmp_path / f"empty.{kind}"
    src.write_text("\n")
    rc, _, err = run_cli(capsys, "--dataset", data, f"--{kind}", src)
    assert rc == 2 and "no ranked list in the file" in err
    rc, out, err = run_cli(capsys, "--dataset", data, f"--{kind}", src, "--allow-empty",
                           "--k", "5", "--json")
    assert rc == 0, err
    result = json.loads(out)
    # t and v are judged (u has nothing answerable); both are missing and score 0
    assert result["missing_in_run"] == ["t", "v"]
    assert result["aggregate"][0]["Cov"] == 0.0 and result["aggregate"][0]["R"] == 0.0


@pytest.mark.parametrize("kind", ["run", "contexts"])
def test_unknown_topic_is_an_error(data, tmp_path, capsys, kind):
    if kind == "run":
        src = write_run_file(tmp_path / "bad.run", {"t": ["t:0#0"], "nope": ["t:0#1"]})
        where = "bad.run: query nope: field 'qid'"
    else:
        src = write_contexts(tmp_path / "bad.jsonl", [{"topic_id": "t", "passages": []},
                                                      {"topic_id": "nope", "passages": []}])
        where = "bad.jsonl: line 2: field 'topic_id'"
    rc, out, err = run_cli(capsys, "--dataset", data, f"--{kind}", src)
    assert rc == 2 and out == ""
    assert where in err and "unknown topic 'nope'" in err


@pytest.mark.parametrize("kind", ["run", "contexts"])
def test_unknown_passage_is_an_error(data, tmp_path, capsys, kind):
    """In a contexts file (the user's own) always; in a run with --strict-collection (a
    run's passage outside the collection is otherwise unjudged: the next test)."""
    if kind == "run":
        src = write_run_file(tmp_path / "bad.run", {"t": ["t:0#0", "t:9#9"]})
        where = "bad.run: line 1: field 'docid'"   # lines written reversed
        strict = ["--strict-collection"]
    else:
        src = write_contexts(tmp_path / "bad.jsonl",
                             [{"topic_id": "t", "passages": ["t:0#0", "t:9#9"]}])
        where = "bad.jsonl: line 1: field 'passages'"
        strict = []
    rc, _, err = run_cli(capsys, "--dataset", data, f"--{kind}", src, *strict)
    assert rc == 2
    assert where in err and "unknown passage 't:9#9'" in err


@pytest.mark.parametrize("line, record, message", [
    ('{"topic_id": "t", "passages": ["t:0#0"', "line 2", "invalid JSON"),
    ('["t", ["t:0#0"]]', "line 2", "expected a JSON object"),
    ('{"passages": ["t:0#0"]}', "line 2: field 'topic_id'", "missing"),
    ('{"topic_id": 7, "passages": []}', "line 2: field 'topic_id'", "non-empty string"),
    ('{"topic_id": "t"}', "line 2: field 'passages'", "missing"),
    ('{"topic_id": "t", "passages": "t:0#0"}', "line 2: field 'passages'", "expected a list"),
    ('{"topic_id": "t", "passages": ["t:0#0", 3]}', "line 2: field 'passages'", "item 1"),
    ('{"topic_id": "t", "passages": ["t:0#0", "t:0#0"]}', "line 2: field 'passages'",
     "appears twice"),
    ('{"topic_id": "t", "passages": [], "context": []}', "line 2: field 'context'",
     "not both"),
    ('{"topic_id": "v", "passages": []}', "line 2: field 'topic_id'",
     "topic 'v' appears twice (first at line 1)"),
])
def test_malformed_contexts_lines(data, tmp_path, capsys, line, record, message):
    ctx = write_contexts(tmp_path / "c.jsonl", [{"topic_id": "v", "passages": ["v:0#0"]}, line])
    rc, _, err = run_cli(capsys, "--dataset", data, "--contexts", ctx)
    assert rc == 2
    assert f"c.jsonl: {record}: " in err and message in err


def test_missing_inputs_and_bad_sizes(data, tmp_path, capsys):
    rc, _, err = run_cli(capsys, "--dataset", data, "--run", tmp_path / "none.run")
    assert rc == 2 and "none.run: no such run file" in err
    run = write_run_file(tmp_path / "mine.run", RANKING)
    rc, _, err = run_cli(capsys, "--dataset", tmp_path / "nodata", "--run", run)
    assert rc == 2 and "not a cruxflow dataset directory" in err
    for bad in (["0"], ["oracle", "oracle"], ["oracle,oracle"], ["ten"]):
        with pytest.raises(SystemExit) as e:
            main(["evaluate", "--dataset", str(data), "--run", str(run), "--k", *bad])
        assert e.value.code == 2
    with pytest.raises(SystemExit):   # exactly one of --run and --contexts
        main(["evaluate", "--dataset", str(data)])


def test_installed_console_script(data, tmp_path):
    assert CONSOLE_SCRIPT.exists(), CONSOLE_SCRIPT
    ctx = write_contexts(tmp_path / "c.jsonl",
                         [{"topic_id": "t", "passages": ["t:0#1", "t:1#2"]}])
    proc = subprocess.run([str(CONSOLE_SCRIPT), "evaluate", "--dataset", str(data),
                           "--contexts", str(ctx), "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    agg = json.loads(proc.stdout)["aggregate"][0]
    assert agg["k"] == "all" and agg["Cov"] == pytest.approx(1 / 3)
    bad = write_contexts(tmp_path / "bad.jsonl", [{"topic_id": "nope", "passages": []}])
    proc = subprocess.run([str(CONSOLE_SCRIPT), "evaluate", "--dataset", str(data),
                           "--contexts", str(bad)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "unknown topic 'nope'" in proc.stderr


def test_a_larger_collection_and_a_missing_tokenizer(data, tmp_path, capsys):
    collection = tmp_path / "corpus" / "passages.jsonl"
    collection.parent.mkdir()
    rows = [{"id": p.id, "contents": p.contents} for p in tiny_dataset().passages.values()]
    rows.append({"id": "y:0#0", "contents": "another split"})
    collection.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ctx = write_contexts(tmp_path / "c.jsonl",
                         [{"topic_id": "t", "passages": ["y:0#0", "t:0#0"]}])
    rc, _, err = run_cli(capsys, "--dataset", data, "--contexts", ctx)
    assert rc == 2 and "unknown passage 'y:0#0'" in err
    rc, out, err = run_cli(capsys, "--dataset", data, "--contexts", ctx, "--json",
                           "--collection", collection.parent)
    assert rc == 0, err
    assert json.loads(out)["aggregate"][0]["Cov"] == pytest.approx((2 / 3 + 0) / 2)
    rc, _, err = run_cli(capsys, "--dataset", data, "--contexts", ctx, "--collection",
                         collection, "--tokenizer", tmp_path / "no-tokenizer")
    assert rc == 2 and "nothing is downloaded" in err


def cli_json(capsys, *args) -> dict:
    rc, out, err = run_cli(capsys, *args, "--json")
    assert rc == 0, err
    return json.loads(out)


def test_many_runs_in_one_call(data, tmp_path, capsys, monkeypatch):
    # one call with three runs: the dataset, its judgments and the scorer made once, each
    # run's rows and notes as when it is alone, and paired tests between the three pairs for
    # every size and metric
    runs = [write_run_file(tmp_path / "one.run", RANKING),
            write_run_file(tmp_path / "two.run", {"t": ["t:0#0", "t:1#2"], "v": ["v:0#0"]}),
            write_run_file(tmp_path / "three.run", {"t": ["x:0#0"]})]
    alone = [cli_json(capsys, "--dataset", data, "--run", r, "--k", "1", "all")
             for r in runs]
    out = tmp_path / "out"
    built = []
    real_init = ContextScorer.__init__
    monkeypatch.setattr(ContextScorer, "__init__",
                        lambda self, *a, **kw: built.append(1) or real_init(self, *a, **kw))
    together = cli_json(capsys, "--dataset", data, "--run", *runs, "--k", "1", "all",
                        "--output", out)
    assert together["aggregate"] == [row for one in alone for row in one["aggregate"]]
    assert together["runs"] == [{k: v for k, v in one.items() if k not in ("aggregate",
                                                                        "names")}
                                for one in alone]
    assert together["names"] == alone[0]["names"]
    assert len(built) == 1      # the judgments and the scorer made once for the three runs
    assert {p.name for p in out.iterdir()} == {"per_query.tsv", "aggregate.tsv", "paired.tsv"}
    # 3 pairs x 2 sizes x the 4 measure columns printed (metrics.names.PAPER_COLUMNS)
    assert len(together["paired"]) == 3 * 2 * 4
    assert {(r["a"], r["b"]) for r in together["paired"]} == {
        ("one", "two"), ("one", "three"), ("two", "three")}
    rc = main(["evaluate", "--dataset", str(data), "--run", str(runs[0]), str(runs[1])])
    text = capsys.readouterr().out
    assert rc == 0 and "| one " in text and "| two " in text and "Holm" in text


# --- the CRUX release: the workflow's scorer and the authors' script from one command ----------

RELEASE = Path(__file__).parent / "data" / "crux" / "release" / "crux-mds-duc04"


def test_crux_root_scores_both_ways(tmp_path, capsys):
    run = RELEASE / "run" / "bm25.run"
    rc, out, err = run_cli(capsys, "--crux-root", RELEASE, "--run", run, "--k", "10", "--json",
                           "--output", tmp_path / "out")
    assert rc == 0, err
    got = json.loads(out)
    # the workflow's Cov@10 counts each topic's answerable questions and scores a judged topic
    # missing from the run as an empty context: duc04-test-0 (q0, q1 answered) 1,
    # duc04-test-1 1, duc04-test-3 (missing) 0; duc04-test-2 has no answerable question
    agg = got["aggregate"][0]
    assert agg["Cov"] == pytest.approx(2 / 3) and agg["topics"] == 3
    # the authors' script on the same files (tests/test_crux_eval.py has the arithmetic)
    # under names that say how it differs: every question, file order, the run's topics
    script = got["crux_eval"]["aggregate"]
    assert script["Cov(cut='rank',order='file',questions='all',topics='run')@10"] == \
        pytest.approx((2 / 3 + 1 + 0) / 3)
    assert script["P(cut='rank',qrels='diversity',topics='run')@10"] == pytest.approx(0.2)
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "per_query.tsv", "aggregate.tsv", "crux_eval.json"}


def test_crux_root_with_several_runs_reads_the_release_once(tmp_path, capsys, monkeypatch):
    """Three runs with --crux-root: the release read once (one read_crux, one crux_eval_runs
    call for the authors' measures of all three), each run's rows and the authors' results
    those it gets alone, and the pairs compared both ways."""
    from cruxflow.data.ingest import crux as crux_ingest
    from cruxflow.metrics import crux_eval as crux_eval_module

    first = RELEASE / "run" / "bm25.run"
    lines = first.read_text().splitlines()
    runs = [first, tmp_path / "half.run", tmp_path / "reversed.run"]
    runs[1].write_text("\n".join(lines[::2]) + "\n")
    runs[2].write_text("".join(f"{q} Q0 {d} {r} {-float(s)} x\n" for q, _, d, r, s, _ in
                               (line.split() for line in lines)))
    alone = [cli_json(capsys, "--crux-root", RELEASE, "--run", r, "--k", "10") for r in runs]
    calls = {"read_crux": 0, "crux_eval_runs": 0}
    for module, fn in ((crux_ingest, "read_crux"), (crux_eval_module, "crux_eval_runs")):
        real = getattr(module, fn)

        def counted(*a, _real=real, _fn=fn, **kw):
            calls[_fn] += 1
            return _real(*a, **kw)
        monkeypatch.setattr(module, fn, counted)
    together = cli_json(capsys, "--crux-root", RELEASE, "--run", *runs, "--k", "10")
    assert calls == {"read_crux": 1, "crux_eval_runs": 1}
    assert together["aggregate"] == [row for one in alone for row in one["aggregate"]]
    assert together["crux_eval"] == [one["crux_eval"] for one in alone]
    # the pairs of the 4 measures printed (the paper's and Judged) and of the script's 5
    assert len(together["paired"]) == 3 * 4 and together["crux_eval_paired"]


def test_crux_root_run_over_the_whole_corpus(tmp_path, capsys):
    """The released runs retrieved from the whole corpus; a clone holds the judged passages
    only. A passage outside the collection is unjudged: the authors' numbers and Cov are those
    of the run without it, Den is undefined for the topic whose context holds it, and one
    warning line counts the run lines."""
    root = tmp_path / "crux-mds-duc04"
    shutil.copytree(RELEASE, root)
    shutil.copytree(RELEASE.parent / "crux-mds-corpus", tmp_path / "crux-mds-corpus")
    run = root / "run" / "bm25.run"
    with run.open("a") as f:   # after duc04-test-0's judged lines (score 0.9 < 1.0)
        f.write("duc04-test-0 Q0 multi_news-train-13278:3#9 5 0.9 bm25\n")
    rc, out, err = run_cli(capsys, "--crux-root", root, "--run", run, "--k", "10")
    assert rc == 0, err
    assert "warning: 1 run lines rank a passage outside the collection" in out
    assert "Den undefined at k=10 for 1 topics whose context ranks a passage without text: " \
           "duc04-test-0" in out
    rc, out, err = run_cli(capsys, "--crux-root", root, "--run", run, "--k", "10", "--json")
    got = json.loads(out)
    assert got["run_lines_outside_collection"] == 1
    assert got["aggregate"][0]["Cov"] == pytest.approx(2 / 3)
    rc, want, err = run_cli(capsys, "--crux-root", RELEASE, "--run", RELEASE / "run" / "bm25.run",
                            "--k", "10", "--json")
    before = json.loads(want)["crux_eval"]["aggregate"]
    judged = "Judged(cut='rank',order='file',topics='run')@10"
    assert {m: v for m, v in got["crux_eval"]["aggregate"].items() if m != judged} == \
        {m: v for m, v in before.items() if m != judged}
    # but not the judged share: duc04-test-0's 3 rated of 4 lines is 3 of 5 with it
    assert before[judged] == pytest.approx((3 / 4 + 1 + 1) / 3)
    assert got["crux_eval"]["aggregate"][judged] == pytest.approx((3 / 5 + 1 + 1) / 3)
    assert got["aggregate"][0]["Judged"] == pytest.approx((4 / 6 + 1) / 2)
    rc, _, err = run_cli(capsys, "--crux-root", root, "--run", run, "--strict-collection")
    assert rc == 2 and "bm25.run: line 10: field 'docid'" in err


def test_three_files_give_the_authors_numbers(capsys):
    rc, out, err = run_cli(capsys, "--run", RELEASE / "run" / "bm25.run", "--qrel",
                           RELEASE / "qrels" / "div_qrels-tau3.txt", "--judge",
                           RELEASE / "judge", "--filter-by-oracle")
    assert rc == 0, err
    assert "needs the passage texts" in out
    assert "| Cov@10 | 1.0000 |" in out


def test_release_inputs_need_a_run_and_both_files(tmp_path, capsys):
    ctx = write_contexts(tmp_path / "c.jsonl", [{"topic_id": "t", "passages": []}])
    for argv, message in ((["--crux-root", RELEASE, "--contexts", ctx], "score a --run"),
                          (["--qrel", RELEASE / "qrels" / "div_qrels-tau3.txt", "--run", ctx],
                           "give --qrel and --judge together")):
        rc, _, err = run_cli(capsys, *map(str, argv))
        assert rc == 2 and message in err
    rc, _, err = run_cli(capsys, "--crux-root", tmp_path, "--run", ctx)
    assert rc == 2 and "no qrels/div_qrels-tau3.txt" in err

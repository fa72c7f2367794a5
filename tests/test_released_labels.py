"""The CRUX labeling tool's human ratings are ratings wherever ratings are read, and
docs/released-data.md's walk from the downloaded repository to a Cov@10 runs as written.

tests/data/crux/labeling_clone holds excerpts of the repository as cloned (its README says
which). Expected values are computed here from the raw files, independently of the readers."""

import json
import math
import re
import shlex
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.data.ingest.crux_common import read_ratings

REPO = Path(__file__).resolve().parents[1]
CLONE = REPO / "tests" / "data" / "crux" / "labeling_clone"
A1 = CLONE / "results" / "annotator1" / "qrels_a1.jsonl"
A2 = CLONE / "results" / "annotator2" / "qrels.jsonl"
A3 = CLONE / "annotations" / "annotator3" / "qrels.jsonl"
TESTB = CLONE / "annotator_1" / "crux_testb"
ETA = 3


def merged(files, rule=lambda rs: math.floor(sum(rs) / len(rs) + 0.5)) -> dict:
    """{(topic, passage): {question: rating}} of the annotators' files, by hand: the labels
    other than -1, merged by ``rule`` (the mean rounded half up)."""
    labels = defaultdict(lambda: defaultdict(list))
    for f in files:
        for line in Path(f).read_text().splitlines():
            o = json.loads(line)
            for q, r in o["relevances"].items():
                if r != -1:
                    labels[(o["id"], o["document"])][int(q)].append(r)
    return {key: {q: rule(rs) for q, rs in by_q.items()} for key, by_q in labels.items()}


def run_lines(path) -> list[tuple[str, str, int]]:
    return [(t, p, int(r)) for t, _, p, r, *_ in
            (line.split() for line in Path(path).read_text().splitlines())]


def answered(ratings: dict, topic: str, passages) -> set[int]:
    return {q for p in passages for q, r in ratings.get((topic, p), {}).items() if r >= ETA}


def doc_commands(section: str) -> list[list[str]]:
    """The commands of the first bash block after ``section`` in docs/released-data.md."""
    text = (REPO / "docs" / "released-data.md").read_text()
    after = text[text.index(section):]
    block = re.search(r"```bash\n(.*?)```", after, re.S)[1]
    return [shlex.split(c) for c in block.replace("\\\n", " ").splitlines() if c.strip()]


@pytest.fixture
def cloned(tmp_path, monkeypatch) -> Path:
    """A working directory where the docs' `git clone` has been done (the excerpts copied)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_docs(section: str, capsys) -> list[str]:
    outputs = []
    for argv in doc_commands(section):
        if argv[:2] == ["git", "clone"]:
            shutil.copytree(CLONE, Path(argv[2].rstrip("/").rsplit("/", 1)[1]))
            continue
        assert argv[0] == "cruxflow", argv
        assert main(argv[1:]) == 0, capsys.readouterr().err
        outputs.append(capsys.readouterr())
    return outputs


def test_the_docs_walk_gives_cov_at_10_of_bm25_against_the_human_ratings(cloned, capsys):
    section = "## Scoring a run against the human ratings of the labeling tool"
    ingested, evaluated = run_docs(section, capsys)
    # by hand: the two annotators' ratings merged by their mean; a topic's answerable
    # questions those some rated passage answers; bm25's context its <= 10 lines
    ratings = merged([A1, A2])
    bm25 = run_lines(TESTB / "bm25.run")
    topics = sorted({t for t, _ in ratings})
    covs = []
    for t in topics:
        answerable = answered(ratings, t, [p for tt, p in ratings if tt == t])
        context = [p for tt, p, _ in bm25 if tt == t]
        assert 0 < len(context) <= 10
        covs.append(len(answered(ratings, t, context) & answerable) / len(answerable))
    row = next(line for line in evaluated.out.splitlines() if line.startswith("| bm25"))
    header = next(line for line in evaluated.out.splitlines() if line.startswith("| system"))
    cells = dict(zip([c.strip() for c in header.split("|")],
                     [c.strip() for c in row.split("|")], strict=True))
    assert cells["k"] == "10" and cells["topics"] == str(len(topics)) == "2"
    assert float(cells["Cov"]) == pytest.approx(sum(covs) / len(covs), abs=5e-5)
    assert 0 < float(cells["Cov"]) < 1
    # the ingest said where the ratings came from
    assert "human ratings of 2 annotators (the labeling tool's)" in ingested.out
    assert "rated_passages" in ingested.out


def test_the_authors_script_on_the_same_ratings_says_what_the_rank_column_cut(cloned, capsys):
    run_docs("## Scoring a run against the human ratings of the labeling tool", capsys)
    commands = doc_commands("The authors' script reads the same ratings")
    assert commands[0][:2] == ["cruxflow", "crux-eval"]
    assert main([*commands[0][1:], "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["runs"][0]
    # the rank column holds the topic's index + 1: topic 3's lines (rank 4) are kept, topic
    # 13's (rank 14) all cut; the cause is said, and that the column is not a rank
    bm25 = run_lines(TESTB / "bm25.run")
    cut = sum(r > 10 for _, _, r in bm25)
    assert cut == 10 and result["info"]["lines_beyond_k"] == cut
    assert result["warnings"][0] == (
        "1 of 2 qrels topics are in the run file, but the rank column cut every line of "
        f"theirs (rank > 10; {cut} lines cut in all): left out, as the script does: "
        "duc04-testb-13")
    assert result["warnings"][1] == (
        "ranks not 1..n in 2 of 2 topics (duc04-testb-3: 4, 4, 4, 4, 4); cut at rank <= "
        "10 all the same")
    assert result["info"]["cut_by_rank_column"] == ["duc04-testb-13"]
    # the script's Cov@10: topic 3 only, every one of its 15 questions counted
    ratings = merged([A1, A2])
    kept = [p for t, p, r in bm25 if t == "duc04-testb-3" and r <= 10][:10]
    cov = len(answered(ratings, "duc04-testb-3", kept)) / 15
    name = next(m for m in result["measures"] if m.startswith("Cov"))
    assert result["aggregate"][name] == pytest.approx(cov)
    assert list(result["per_topic"]) == ["duc04-testb-3"]


def test_one_annotators_file_is_a_judge_of_its_own(tmp_path, capsys):
    # crux-eval reads an annotator's export as it reads a judge's ratings, with no ingest
    qrels = tmp_path / "div.txt"
    ratings = merged([A1])
    qrels.write_text("".join(f"{t} {q} {p} 1\n" for (t, p), by_q in ratings.items()
                             for q, r in by_q.items() if r >= ETA))
    assert main(["crux-eval", "--run", str(TESTB / "oracle.run"), "--qrel", str(qrels),
                 "--judge", str(A1), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["runs"][0]
    oracle = run_lines(TESTB / "oracle.run")
    kept = [p for t, p, r in oracle if t == "duc04-testb-3" and r <= 10][:10]
    name = next(m for m in result["measures"] if m.startswith("Cov"))
    assert result["per_topic"]["duc04-testb-3"][name] == pytest.approx(
        len(answered(ratings, "duc04-testb-3", kept)) / 15)


@pytest.mark.parametrize("rule, by_hand", [("mean", None), ("max", max), ("min", min)])
def test_annotators_merged_by_the_stated_rule(rule, by_hand):
    judge = read_ratings([A1, A2, A3], merge=rule)
    want = merged([A1, A2, A3], *([by_hand] if by_hand else []))
    assert judge.layouts == {"labeling-tool"}
    for (t, p), ratings in judge.ratings.items():
        assert len(ratings) == 15                     # every question of the topic, by index
        assert {q: r for q, r in enumerate(ratings) if r != -1} == want[(t, p)]
    assert set(judge.ratings) == set(want)
    human = judge.summary()["human"]
    several = [(k, q) for k, by_q in merged([A1, A2, A3], list).items()
               for q, rs in by_q.items() if len(rs) > 1]
    assert human["questions_rated_by_several"] == len(several) > 0
    assert human["questions_rated_differently"] == sum(
        len(set(merged([A1, A2, A3], list)[k][q])) > 1 for k, q in several)
    assert human["merge"] == rule


def test_the_mean_rounds_half_up_and_a_question_nobody_rated_answers_nothing(tmp_path):
    a, b = tmp_path / "a" / "qrels.jsonl", tmp_path / "b" / "qrels.jsonl"
    for f, rel in ((a, {"0": 3, "1": -1, "2": 1}), (b, {"0": 2, "1": -1, "2": 2})):
        f.parent.mkdir()
        f.write_text(json.dumps({"id": "t", "document": "t:0#0", "relevances": rel}) + "\n")
    assert read_ratings([a, b]).ratings[("t", "t:0#0")] == [3, -1, 2]   # 2.5 -> 3, 1.5 -> 2
    assert read_ratings([a, b], merge="min").ratings[("t", "t:0#0")] == [2, -1, 1]


def test_bad_human_ratings_are_refused_with_file_and_line(tmp_path):
    twice = tmp_path / "twice.jsonl"
    line = A1.read_text().splitlines()[0]
    twice.write_text(line + "\n" + line + "\n")
    with pytest.raises(DataError, match="rated twice by one annotator") as e:
        read_ratings(twice)
    assert str(e.value).startswith(f"{twice}: line 2: field 'document'")
    judge = tmp_path / "judge.jsonl"
    judge.write_text(json.dumps({"id": "duc04-testb-3", "docid": "duc04-testb-3:0#0",
                                 "rating": [0] * 15}) + "\n")
    with pytest.raises(DataError, match="human ratings .* and .* judge ratings"):
        read_ratings([judge, A1])
    with pytest.raises(DataError, match="question 3, but topic duc04-testb-3 has 3 questions"):
        read_ratings(A1, n_questions={"duc04-testb-3": 3, "duc04-testb-13": 15})
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line.replace('"relevances": {"0": 3', '"relevances": {"0": 7') + "\n")
    with pytest.raises(DataError, match="relevances"):
        read_ratings(bad)


def test_a_folder_holding_the_annotators_files_is_rated_by_them(tmp_path, capsys):
    # the issue's layout: the annotators' files dropped beside the topics and runs
    folder = tmp_path / "testb"
    shutil.copytree(TESTB, folder)
    shutil.copy(A1, folder / "annotator1_qrels.jsonl")
    shutil.copy(A2, folder / "annotator2_qrels.jsonl")
    docs = CLONE / "annotator_1" / "documents"
    assert main(["ingest", "--format", "crux", "--input", str(folder), "--collection",
                 str(docs), "--output", str(tmp_path / "a")]) == 0
    assert re.search(r"^  rated_passages +15$", capsys.readouterr().out, re.M)
    assert main(["ingest", "--format", "crux", "--input", str(TESTB), "--collection",
                 str(docs), "--judge", str(A1), str(A2), "--output", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    assert (tmp_path / "a" / "answerability.jsonl").read_text() == \
        (tmp_path / "b" / "answerability.jsonl").read_text()
    # --judge in place of the folder's files: said, not skipped in silence
    assert main(["ingest", "--format", "crux", "--input", str(folder), "--collection",
                 str(docs), "--judge", str(A1), "--output", str(tmp_path / "c")]) == 0
    assert ("2 ratings files of the folder not used (--judge given): annotator1_qrels.jsonl, "
            "annotator2_qrels.jsonl") in capsys.readouterr().out


def test_a_dataset_without_ratings_says_so_and_evaluate_names_it(tmp_path, capsys):
    out = tmp_path / "x"
    assert main(["ingest", "--format", "crux", "--input", str(TESTB), "--collection",
                 str(CLONE / "annotator_1" / "documents"), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"^  rated_passages +0$", printed, re.M)
    assert "note: no ratings: nothing can be scored against it yet; --judge names ratings" \
        in printed
    assert main(["evaluate", "--dataset", str(out), "--run", str(out / "runs" / "bm25.run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"cruxflow: error: {out}: no topic has an answerable question at eta=3: "
                   "nothing to score (the dataset has no ratings: ingest it with ratings "
                   "(cruxflow ingest --judge) or let the workflow rate it)")
    assert "None" not in err


def test_the_api_takes_an_annotators_file_as_judgments():
    import cruxflow

    frame = cruxflow.evaluate(str(TESTB / "bm25.run"), str(A1), ["Cov@10"])
    ratings = merged([A1])
    bm25 = run_lines(TESTB / "bm25.run")
    for t in ("duc04-testb-3", "duc04-testb-13"):
        answerable = answered(ratings, t, [p for tt, p in ratings if tt == t])
        context = [p for tt, p, _ in bm25 if tt == t]
        want = len(answered(ratings, t, context) & answerable) / len(answerable)
        assert frame.loc[t, "Cov@10"] == pytest.approx(want)

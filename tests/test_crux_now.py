"""The CRUX authors' newer subsets (issue 39): crux-neuclir, crux-ragtime, crux-researchy and
crux-biogen read as their loaders read them, and LANCER's NeuCLIR runs scored in the layout of
its eval_lancer.sh.

Fixtures: tests/data/crux/neuclir_release/ holds excerpts of real public files (its README
names them); tests/data/crux/release/crux-{neuclir,ragtime,researchy,biogen} are written from
the authors' loaders (DylanJoo/crux ``crux/tools/*/ir_utils.py``,
``crux-neuclir/convert_official_data_to_crux.py``): no release file of those subsets is public.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import ir_measures
import numpy as np
import pytest
from ir_measures import P, Qrel, ScoredDoc, alpha_nDCG, nDCG

from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.data.ingest import IngestOptions, ingest
from cruxflow.data.ingest.crux_common import read_collection
from cruxflow.data.ingest.crux_release import UNSHIPPED_QUESTION
from cruxflow.metrics.crux_eval import crux_eval, measure_names

DATA = Path(__file__).parent / "data" / "crux"
EXCERPT = DATA / "neuclir_release"
NEUCLIR = EXCERPT / "crux-neuclir"
LANCER_RUN = (EXCERPT / "results" / "neuclir-runs"
              / "lsr-milco-neuclir.lancer.agg_sum.nq_2.top10.run")
RELEASE = DATA / "release"


def read(path, **kw):
    return ingest("crux", path, IngestOptions(**kw))


def lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines() if line.strip()]


# --- LANCER's NeuCLIR run against the real crux-neuclir excerpt --------------------------------

def test_the_excerpt_holds_together():
    """The qrels lines (read off the qrel file) and the ratings (read off the ratings file)
    were copied apart: they agree on every nugget the qrels excerpt covers (1-21)."""
    ratings = {json.loads(x)["docid"]: json.loads(x)["rating"]
               for x in (NEUCLIR / "judge" / "ratings.human.jsonl").read_text().splitlines()}
    assert {len(r) for r in ratings.values()} == {84}
    qrels = {(int(n), d) for _, n, d, _ in lines(NEUCLIR / "qrels" /
                                                  "neuclir24-test-request.qrel")}
    from_ratings = {(i + 1, d) for d, r in ratings.items() for i, v in enumerate(r[:21])
                    if v >= 3}
    assert qrels == from_ratings and len(qrels) == 53
    assert sorted(d for _, _, d, *_ in lines(LANCER_RUN)) == sorted(ratings)


def test_lancer_neuclir_run_scored_as_eval_lancer_does():
    """``crux-eval --run <LANCER run> --qrel crux-neuclir/qrels/neuclir24-test-request.qrel
    --judge crux-neuclir/judge/ratings.human.jsonl`` (eval_lancer.sh's NeuCLIR loop, no
    --filter-by-oracle): every value against an independent route (ir_measures, pyndeval, and
    numpy over the ratings)."""
    result = crux_eval(LANCER_RUN, NEUCLIR / "qrels" / "neuclir24-test-request.qrel",
                       NEUCLIR / "judge" / "ratings.human.jsonl")
    names = {v: k for k, v in measure_names(10).items()}
    got = {name: result.aggregate[ours] for name, ours in names.items()}
    # Cov@10: every nugget counts (no oracle filter); 38 of topic 300's 84 are rated >= 3 by
    # some document of the top 10
    ratings = np.array([json.loads(x)["rating"] for x in
                        (NEUCLIR / "judge" / "ratings.human.jsonl").read_text().splitlines()])
    assert (ratings.max(0) >= 3).sum() == 38
    assert got["Cov@10"] == pytest.approx(38 / 84)
    # P, nDCG over the qrels as relevance (the script's threshold 1), alpha-nDCG over nuggets
    qlines = lines(NEUCLIR / "qrels" / "neuclir24-test-request.qrel")
    relevance = {(t, d): int(r) for t, _, d, r in qlines}
    run = [ScoredDoc(t, d, float(s)) for t, _, d, _, s, _ in lines(LANCER_RUN)]
    plain = ir_measures.calc_aggregate([P @ 10, nDCG @ 10],
                                       [Qrel(t, d, r) for (t, d), r in relevance.items()], run)
    diverse = ir_measures.calc_aggregate([alpha_nDCG @ 10],
                                         [Qrel(t, d, int(r), n) for t, n, d, r in qlines], run)
    assert got["P@10"] == pytest.approx(plain[P @ 10]) == pytest.approx(0.9)
    assert got["nDCG@10"] == pytest.approx(plain[nDCG @ 10])
    assert got["alpha_nDCG@10"] == pytest.approx(diverse[alpha_nDCG @ 10], abs=1e-9)
    assert 0.9 < got["alpha_nDCG@10"] < 1


def test_the_cli_prints_the_scripts_line_for_the_lancer_run(capsys):
    assert main(["crux-eval", "--run", str(LANCER_RUN), "--qrel",
                 str(NEUCLIR / "qrels" / "neuclir24-test-request.qrel"), "--judge",
                 str(NEUCLIR / "judge" / "ratings.human.jsonl"), "--authors-line"]) in (0, None)
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.endswith("| P@10 | 0.9000 | nDCG@10 | 1.0000 | alpha_nDCG@10 | 0.9784 | "
                         "Cov@10 | 0.4524 |")


def test_the_excerpt_ingests_with_a_placeholder_question_per_rating():
    ds, report = read(NEUCLIR)
    assert report.layout == "Hugging Face release clone (crux-neuclir)"
    topic = ds.topics["300"]
    # title + problem statement, as the authors' load_query joins them
    assert topic.query.startswith("Japan suicide rate COVID-19 I need a report on suicide")
    assert len(topic.questions) == 84
    assert topic.questions[0] == UNSHIPPED_QUESTION.format(n=1)
    assert report.counts["topics_with_placeholder_questions"] == ["300"]
    assert len(ds.ratings) == 10
    assert any("human" in n for n in report.notes)


# --- the newer subsets, from the loaders ---------------------------------------------------

def test_neuclir_nuggets_are_the_rated_questions():
    """crux-neuclir's subtopics/ holds both files the authors' converter writes: the nuggets
    (an OR question with its answers, an AND question's answer) are what the ratings index."""
    ds, report = read(RELEASE / "crux-neuclir")
    assert ds.topics["300"].questions == [
        "Which subsidies were cut? Answer: rooftop solar rebates or feed-in tariffs",
        "Who opposed the cuts? Answer: installers"]
    assert report.counts["nugget_topics"] == 1
    assert any("both sub-questions and nuggets" in n for n in report.notes)


def test_ragtime_requests_in_both_spellings_and_and_nuggets():
    ds, report = read(RELEASE / "crux-ragtime")
    assert report.layout == "Hugging Face release clone (crux-ragtime)"
    # the report request (title + problem statement) and the NeuCLIR ad hoc topic (title +
    # description), as the authors' load_query and load_topic join them
    assert ds.topics["rt-1"].query == ("Grain exports Report on grain exports through the "
                                       "Black Sea in 2024.")
    assert ds.topics["rt-2"].query == "Port strikes Which ports were closed by strikes in 2024?"
    # an AND question split into one nugget per answer, as the ratings are
    assert ds.topics["rt-1"].questions[1:] == [
        "How much grain was shipped? Answer: 40 million tonnes",
        "How much grain was shipped? Answer: in 2024"]
    assert ds.ratings[("rt-1", "d2")] == [0, 0, 3]
    assert [q["topics"] for q in report.counts["qrels"]] == [2]


def test_researchy_topics_carry_their_decomposition_and_shards_read_as_one():
    ds, report = read(RELEASE / "crux-researchy")
    assert report.layout == "Hugging Face release clone (crux-researchy)"
    t = ds.topics["rq-1"]
    assert t.query == "why do cities build pocket parks"
    # remove_header: the "- " bullets go
    assert t.questions == ["What are pocket parks?", "How do pocket parks benefit cities?"]
    # judge/ratings.<model>.<shard>-<n>.jsonl, read as one folder; -1 kept (answers nothing)
    assert ds.ratings == {("rq-1", "h1"): [5, 1], ("rq-1", "h2"): [0, 4], ("rq-2", "h3"): [-1]}
    # its own ClueWeb22-B subset under docs/, title on its own line
    assert ds.passages["h1"].contents == ("Pocket parks\nPocket parks are small public parks built "
                                      "on vacant lots.")
    assert len(ds.passages) == 3
    assert any("carry their sub-questions" in n for n in report.notes)


def test_biogen_topics_runs_and_a_gzipped_collection():
    ds, report = read(RELEASE / "crux-biogen")
    assert report.layout == "Hugging Face release clone (crux-biogen)"
    assert ds.topics["bg-1"].query == (
        "Metformin How does metformin lower blood glucose? A patient with type 2 diabetes "
        "asks about metformin.")
    assert ds.ratings == {}
    assert any("no judge/" in n for n in report.notes)
    assert ds.passages["38002"].contents == "Metformin activates AMPK in the liver."


def test_a_topic_record_of_no_known_kind_names_the_kinds(tmp_path):
    (tmp_path / "topic").mkdir()
    (tmp_path / "judge").mkdir()
    (tmp_path / "topic" / "t.jsonl").write_text(json.dumps({"qid": "1", "text": "x"}) + "\n")
    err = pytest.raises(DataError, read, tmp_path).value
    assert "not a topic record" in str(err) and "researchy" in str(err)
    assert "t.jsonl" in str(err) and "line 1" in str(err)


def test_a_bad_nugget_is_named(tmp_path):
    for name in ("topic", "subtopics"):
        (tmp_path / name).mkdir()
    (tmp_path / "topic" / "t.jsonl").write_text(json.dumps({"id": "1", "request": "r"}) + "\n")
    (tmp_path / "subtopics" / "n.jsonl").write_text(
        json.dumps({"id": "1", "nuggets": [["q?", "a"], ["q?", 3]]}) + "\n")
    err = pytest.raises(DataError, read, tmp_path).value
    assert err.field == "nuggets" and "item 1" in str(err)


def test_gzipped_collections_read_and_a_broken_one_is_named(tmp_path):
    good = tmp_path / "c.jsonl.gz"
    good.write_bytes(gzip.compress(b'{"id": "a", "text": "x", "title": "T"}\n'))
    assert read_collection(tmp_path)[0] == {"a": "T\nx"}
    (tmp_path / "d.jsonl.gz").write_bytes(b"not gzip")
    err = pytest.raises(DataError, read_collection, tmp_path).value
    assert "gzip" in str(err) and "d.jsonl.gz" in str(err)


def test_a_subset_without_qrels_scores_after_ingest(tmp_path):
    """crux-researchy ships ratings but no qrels: ingested, the workflow's scorer scores it.
    By hand: rq-1's h1 [5, 1] and h2 [0, 4] answer both questions; the run's top 2 holds
    both (Cov@2 1); rq-2's one rating is -1, so it has no answerable question."""
    from cruxflow.data.ingest import ingest_to
    from cruxflow.metrics.evaluate import evaluate_run

    out = tmp_path / "researchy"
    ingest_to("crux", RELEASE / "crux-researchy", out, IngestOptions())
    run = out / "runs" / "run.researchy-test-init-q.bm25.clueweb22-b.txt"
    result = evaluate_run(out, run=run, ks=[2])
    row = result.aggregate.set_index("k").loc["2"]
    assert row["topics"] == 1 and row["Cov"] == 1.0
    assert result.info["topics_not_evaluated"] == ["rq-2"]

"""cruxflow agreement: any two label sets item by item (cruxflow.paper.item_agreement) and
system by system (cruxflow.paper.system_agreement), with intervals. Expected values come from
scikit-learn, scipy and statsmodels on the raw files, or by hand in the comments."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.paper.item_agreement import kappa_of_draws, pair_agreement
from cruxflow.paper.label_sets import detect_kind, read_label_set
from cruxflow.paper.system_agreement import top_overlap

pytest.importorskip("krippendorff")

DATA = Path(__file__).parent / "data"
NIST = DATA / "trec_rag25" / "qrels.rag25.test.txt"
UMBRELA = DATA / "trec_rag25" / "qrels.rag25.test-umbrela2.txt"
CRUX = DATA / "crux"
JUDGE = CRUX / "paper" / "testb_judgements.jsonl"
ANN1 = CRUX / "labels" / "annotator1" / "qrels.jsonl"
ANN2 = CRUX / "labels" / "annotator2" / "qrels.jsonl"
RUNS = [CRUX / "paper" / f"{s}.run" for s in ("bm25", "dr_rankfirst", "oracle")]


def qrels(path) -> dict:
    """{(topic, doc): grade} read by hand."""
    out = {}
    for line in Path(path).read_text().splitlines():
        t, _, d, g = line.split()
        out[(t, d)] = int(g)
    return out


def cli_json(capsys, *argv) -> dict:
    assert main([str(a) for a in argv]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


# --- item level: NIST against UMBRELA on the TREC 2025 RAG excerpt ----------------------------

def test_nist_against_umbrela_kappas_are_scikit_learns(capsys):
    got = cli_json(capsys, "agreement", "--labels", f"NIST={NIST}", f"UMBRELA={UMBRELA}",
                   "--json", "--bootstrap", "300")
    nist, umbrela = qrels(NIST), qrels(UMBRELA)
    items = sorted(nist)
    assert items == sorted(umbrela)            # the excerpt: the same pairs in both files
    a, b = [nist[i] for i in items], [umbrela[i] for i in items]
    (pair,) = got["pairs"]
    assert (pair["a"], pair["b"], pair["n"]) == ("NIST", "UMBRELA", len(items))
    assert pair["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b))
    grades = list(range(5))                    # NIST grades 0-4: the weights' scale
    assert pair["kappa_linear"] == pytest.approx(
        cohen_kappa_score(a, b, labels=grades, weights="linear"))
    assert pair["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(a, b, labels=grades, weights="quadratic"))
    # at the default threshold (1, trec_eval's relevant) and at 2
    assert pair["kappa_threshold"] == pytest.approx(
        cohen_kappa_score([x >= 1 for x in a], [y >= 1 for y in b]))
    assert pair["exact"] == pytest.approx(np.mean(np.array(a) == np.array(b)))
    # the confusion matrix and each side's base rates, counted by hand
    confusion = pair["confusion"]["rows_a_columns_b"]
    assert confusion[3][4] == sum(x == 3 and y == 4 for x, y in zip(a, b, strict=True))
    assert pair["base_rates"]["b"]["4"] == pytest.approx(b.count(4) / len(b))
    assert pair["base_rates"]["a_positive"] == pytest.approx(np.mean(np.array(a) >= 1))
    # a kappa with an interval for each topic: scikit-learn's on the topic's pairs
    topics = sorted({t for t, _ in items})
    assert [t["topic"] for t in pair["per_topic"]] == topics == ["225", "233", "273", "499"]
    for row in pair["per_topic"]:
        mine = [i for i in items if i[0] == row["topic"]]
        assert row["n"] == len(mine)
        assert row["kappa"] == pytest.approx(cohen_kappa_score([nist[i] for i in mine],
                                                               [umbrela[i] for i in mine]))
        assert row["ci_low"] < row["kappa"] < row["ci_high"]
        assert row["ci_high"] - row["ci_low"] < 0.3
    assert {"topic", "kappa", "ci_low", "ci_high"} <= set(pair["per_topic"][0])


def test_the_per_topic_bootstrap_is_scikit_learns_kappa_resample_by_resample():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 4, 60)
    b = np.clip(a + rng.integers(-1, 2, 60), 0, 3)
    draws = rng.integers(0, 60, (300, 60))
    fast = kappa_of_draws(a, b, draws)
    slow = [cohen_kappa_score(a[d], b[d]) for d in draws]
    assert fast == pytest.approx(slow, abs=1e-12)
    # one grade everywhere on both sides: chance agreement 1, kappa undefined (NaN)
    assert np.isnan(kappa_of_draws(np.array([2, 2]), np.array([2, 2]),
                                   np.array([[0, 1]])))[0]


def test_pair_statistics_by_hand():
    items = [("t", f"d{i}") for i in range(6)]
    a = dict(zip(items, [3, 2, 2, 1, 0, 0], strict=True))
    b = dict(zip(items, [3, 2, 1, 1, 0, 1], strict=True))
    p = pair_agreement(a, b, names=("a", "b"), scale=(0, 3), threshold=2, n_resamples=0)
    # exact 4/6; at threshold 2: a 1 1 1 0 0 0, b 1 1 0 0 0 0 -> p_o 5/6, p_e (3*2 + 3*4)/36
    assert p.exact == pytest.approx(4 / 6)
    assert p.kappa_threshold == pytest.approx((5 / 6 - 18 / 36) / (1 - 18 / 36))
    assert (p.precision, p.recall) == (pytest.approx(1.0), pytest.approx(2 / 3))
    assert p.confusion[2] == [0, 1, 1, 0] and p.base_rate_b[1] == pytest.approx(3 / 6)
    # quadratic weights (i - j)^2 / 9 by the definition: 1 - observed / expected disagreement
    x, y = list(a.values()), list(b.values())
    observed = sum((u - v) ** 2 for u, v in zip(x, y, strict=True)) / 6
    expected = sum((u - v) ** 2 for u in x for v in y) / 36
    assert p.kappa_quadratic == pytest.approx(1 - observed / expected)
    assert pair_agreement(a, a, names=("a", "a2"), scale=(0, 3), threshold=2,
                          n_resamples=0).alpha_ordinal == pytest.approx(1.0)
    none = pair_agreement(a, {("u", "x"): 1}, names=("a", "c"), scale=(0, 3), threshold=2)
    assert none.n == 0 and none.warning == "no shared items" and none.cohen_kappa is None


def test_three_sets_give_fleiss_and_each_against_the_others(tmp_path, capsys):
    # three raters of four items, grades 0-2 (TREC qrels): by hand (Fleiss), items
    # (2,2,1) (0,0,0) (1,2,1) (0,1,0): P_i 1/3, 1, 1/3, 1/3 -> P 1/2; grades 0:5 1:4 2:3 of 12
    # -> P_e (25 + 16 + 9) / 144 = 50/144; kappa = (1/2 - 50/144) / (1 - 50/144) = 22/94
    grades = {"x": [2, 0, 1, 0], "y": [2, 0, 2, 1], "z": [1, 0, 1, 0]}
    for name, gs in grades.items():
        (tmp_path / f"{name}.qrels").write_text(
            "".join(f"1 0 d{i} {g}\n" for i, g in enumerate(gs)))
    got = cli_json(capsys, "agreement", "--labels", *sorted(tmp_path.glob("*.qrels")),
                   "--json", "--bootstrap", "0")
    assert [(p["a"], p["b"]) for p in got["pairs"]] == [("x", "y"), ("x", "z"), ("y", "z")]
    (fleiss,) = got["fleiss"]
    assert fleiss["n_items"] == 4 and fleiss["kappa"] == pytest.approx(22 / 94)
    # x against y and z merged by the mean rounded half up: (2,1)->2 (0,0)->0 (2,1)->2
    # (1,0)->1 (0.5 rounds up): x 2 0 1 0 against 2 0 2 1 -> exact 2/4
    others = {p["b"]: p for p in got["against_others"]}
    assert others["x"]["a"] == "(others, mean)" and others["x"]["exact"] == 0.5
    majority = cli_json(capsys, "agreement", "--labels", *sorted(tmp_path.glob("*.qrels")),
                        "--json", "--bootstrap", "0", "--merge", "majority")
    # the lower median of two: (2,1)->1 (0,0)->0 (2,1)->1 (1,0)->0: x 2 0 1 0 -> exact 3/4
    assert {p["b"]: p for p in majority["against_others"]}["x"]["exact"] == 0.75
    assert majority["merge"] == "majority"


def test_every_kind_of_label_is_told_from_its_file(tmp_path):
    assert detect_kind(NIST) == "qrels"
    assert detect_kind(JUDGE) == "ratings" and detect_kind(ANN1) == "ratings"
    assert detect_kind(CRUX / "labels" / "annotator1" / "qlabels.jsonl") == "reports"
    assert detect_kind(DATA / "support" / "labels.tsv") == "support"
    assert detect_kind(DATA / "nuggets" / "autonuggetizer" / "assignments.jsonl") == "nuggets"
    nuggets = read_label_set("n", [(None, DATA / "nuggets" / "autonuggetizer"
                                    / "assignments.jsonl")])
    first = json.loads((DATA / "nuggets" / "autonuggetizer" / "assignments.jsonl")
                       .read_text().splitlines()[0])
    item = (first["qid"], first["docid"], first["nuggets"][0]["text"])
    assert nuggets.labels[item] == 2          # "support": the highest of 0-2
    support = read_label_set("s", [(None, DATA / "support" / "labels.tsv")])
    assert support.labels[("2024-105741", "run_alpha", 1,
                           "msmarco_v2.1_doc_13_1647729865#5_3617401220")] == 1
    odd = tmp_path / "odd.txt"
    odd.write_text("a b c\n")
    with pytest.raises(DataError, match="3 columns: TREC qrels have 4.*give --format"):
        detect_kind(odd)
    # an annotation export names its annotators: one set, each annotator kept and merged
    export = tmp_path / "passage_ratings.jsonl"
    export.write_text("".join(json.dumps({"topic_id": "t", "passage_id": "t:0#0",
                                          "question": q, "annotator": who, "rating": r}) + "\n"
                              for who, q, r in (("a", 0, 4), ("b", 0, 2), ("a", 1, 1))))
    people = read_label_set("people", [(None, export)])
    assert people.annotators == {"a": {("t", "t:0#0", 0): 4, ("t", "t:0#0", 1): 1},
                                 "b": {("t", "t:0#0", 0): 2}}
    assert people.labels == {("t", "t:0#0", 0): 3, ("t", "t:0#0", 1): 1}   # (4+2)/2 = 3
    assert (people.merged_items, people.differing_items) == (1, 1)


def test_judge_against_annotators_keeps_the_ceiling_rows(capsys):
    out = cli_json(capsys, "agreement", "--human", f"a1={ANN1}", f"a2={ANN2}", "--judge",
                   JUDGE, "--json", "--bootstrap", "0")
    pairs = {(p["a"], p["b"]): p for p in out["pairs"]}
    # annotators against each other (the ceiling), each against the judge, the merged set
    # against the judge; never an annotator against the set merged from it
    assert set(pairs) == {("a1", "a2"), ("a1", "judge"), ("a2", "judge"), ("humans", "judge")}
    assert pairs[("a1", "a2")]["note"] == "ceiling"
    # a1 (human, judge): (4,4) (1,0) (2,3) (3,2) (5,4) -> exact 1/5
    assert pairs[("a1", "judge")]["n"] == 5 and pairs[("a1", "judge")]["exact"] == 0.2
    assert out["label_sets"]["humans"]["merge"] == "mean"


# --- system level ---------------------------------------------------------------------------

def expected_tau_ap(reference, estimate) -> float:
    """tau_AP averaged over every way of breaking the ties of both sides (Yilmaz et al.'s
    formula on each strict order), by enumeration."""
    n = len(reference)
    values = []
    for ref_order in itertools.permutations(range(n)):
        if any(reference[ref_order[i]] < reference[ref_order[i + 1]] for i in range(n - 1)):
            continue
        for est_order in itertools.permutations(range(n)):
            if any(estimate[est_order[i]] < estimate[est_order[i + 1]] for i in range(n - 1)):
                continue
            rank = {s: i for i, s in enumerate(ref_order)}
            total = sum(sum(rank[est_order[j]] < rank[est_order[i]] for j in range(i)) / i
                        for i in range(1, n))
            values.append(2 / (n - 1) * total - 1)
    return float(np.mean(values))


def write_tot(path: Path, table: dict) -> None:
    """A leaderboard in autojudge's tot format: run measure topic value."""
    path.write_text("".join(f"{s} m {t} {v}\n" for s, topics in table.items()
                            for t, v in topics.items()))


# four systems over three topics; the means tie in places on each side:
#   reference: A .6  B .4  C .4  D .2        other: A .5  B .3  C .5  D .1
REFERENCE = {"A": {"1": .9, "2": .6, "3": .3}, "B": {"1": .6, "2": .4, "3": .2},
             "C": {"1": .2, "2": .4, "3": .6}, "D": {"1": .2, "2": .2, "3": .2}}
OTHER = {"A": {"1": .7, "2": .5, "3": .3}, "B": {"1": .3, "2": .3, "3": .3},
         "C": {"1": .5, "2": .4, "3": .6}, "D": {"1": .0, "2": .1, "3": .2}}


def test_tau_b_and_tau_ap_with_ties_against_scipy_and_by_hand(tmp_path, capsys):
    write_tot(tmp_path / "ref.tot", REFERENCE)
    write_tot(tmp_path / "other.tot", OTHER)
    got = cli_json(capsys, "agreement", "--leaderboard", f"people={tmp_path / 'ref.tot'}",
                   f"judge={tmp_path / 'other.tot'}", "--json", "--bootstrap", "400",
                   "--top", "1")
    (r,) = got["systems"]
    systems = ["A", "B", "C", "D"]
    ref = [np.mean(list(REFERENCE[s].values())) for s in systems]
    est = [np.mean(list(OTHER[s].values())) for s in systems]
    assert [r["means"][s]["reference"] for s in systems] == pytest.approx(ref)
    # B's and C's means tie (.6+.4+.2 and .2+.4+.6 differ in a float's last bits: compared
    # to 12 decimals). tau-b by hand, 6 pairs: A-B, A-D, B-D, C-D concordant, A-C tied in the
    # other only, B-C in the reference only: (4 - 0) / sqrt((6 - 1)(6 - 1)) = 4/5; scipy's
    ref, est = np.round(ref, 12), np.round(est, 12)
    assert r["kendall_tau_b"]["value"] == pytest.approx(stats.kendalltau(ref, est).statistic)
    assert r["kendall_tau_b"]["value"] == pytest.approx(4 / 5)
    assert r["spearman"]["value"] == pytest.approx(stats.spearmanr(ref, est).statistic)
    # tau_AP: the mean over every way of breaking both sides' ties, enumerated
    assert r["tau_ap"]["value"] == pytest.approx(expected_tau_ap(ref, est))
    # top-1 overlap: the reference's best is A; the other's best are A and C (tied): 1/2
    assert r["top_k_overlap"]["value"] == pytest.approx(0.5)
    # the interval: a percentile bootstrap over the 3 topics, every system's scores drawn
    # together (the draws of numpy's default_rng(0), as scipy.stats.bootstrap draws them)
    draws = np.random.default_rng(0).integers(0, 3, (400, 3))
    topics = ["1", "2", "3"]
    rt = np.array([[REFERENCE[s][t] for s in systems] for t in topics])
    ot = np.array([[OTHER[s][t] for s in systems] for t in topics])
    taus = [stats.kendalltau(np.round(rt[d].mean(0), 12), np.round(ot[d].mean(0), 12))
            .statistic for d in draws]
    taus = [t for t in taus if not np.isnan(t)]
    low, high = np.percentile(taus, [2.5, 97.5])
    assert (r["kendall_tau_b"]["ci_low"], r["kendall_tau_b"]["ci_high"]) == \
        (pytest.approx(low), pytest.approx(high))
    assert r["bootstrap"]["resamples"] == 400 and r["n_topics"] == 3


def test_top_overlap_by_hand():
    assert top_overlap([4, 3, 2, 1], [1, 2, 3, 4], 2) == 0.0
    assert top_overlap([4, 3, 2, 1], [4, 2, 3, 1], 2) == 0.5
    assert top_overlap([4, 3, 3, 1], [4, 3, 1, 1], 2) == pytest.approx(2 / 3)   # {0,1,2} & {0,1}
    assert top_overlap([1, 2], [1, 2], 2) is None


# the issue's three runs on four topics: Cov@1 is the share of the questions the run's first
# passage answers. The judge finds A best (3 questions), then B (2), then C (1); the humans C
# (3), then A (2), then B (1). good ranks A first, bad C first, rand B first.
JUDGE_RATINGS = {"A": [5, 4, 3], "B": [4, 3, 0], "C": [0, 0, 3]}
HUMAN_RATINGS = {"A": [4, 3, 1], "B": [0, 0, 5], "C": [3, 5, 4]}
ORDERS = {"good": "ABC", "bad": "CBA", "rand": "BCA"}


def rand_good_bad(tmp_path: Path, runs=("rand", "good", "bad")) -> list[str]:
    judge, human = tmp_path / "judge.jsonl", tmp_path / "human.jsonl"
    topics = [f"t{i}" for i in range(4)]
    judge.write_text("".join(json.dumps({"id": t, "docid": f"{t}:{p}", "rating": r}) + "\n"
                             for t in [*topics, "t4"] for p, r in JUDGE_RATINGS.items()))
    # two more labelled topics, both left out: t4, where the humans find nothing answerable,
    # and t5, which the judge never rated (and no run ranks: an empty context, Cov 0)
    labels = [{"id": t, "docid": f"{t}:{p}", "rating": r} for t in topics
              for p, r in HUMAN_RATINGS.items()]
    labels += [{"id": "t4", "docid": f"t4:{p}", "rating": [0, 1, 2]} for p in "ABC"]
    labels += [{"id": "t5", "docid": "t5:A", "rating": [5, 5, 5]}]
    human.write_text("".join(json.dumps(x) + "\n" for x in labels))
    paths = []
    for name in runs:
        run = tmp_path / f"{name}.run"
        run.write_text("".join(f"{t} Q0 {t}:{p} {r + 1} {3 - r} {name}\n"
                               for t in [*topics, "t4"] for r, p in enumerate(ORDERS[name])))
        paths.append(str(run))
    return ["agreement", "--labels", f"people={human}", f"judge={judge}", "--run", *paths,
            "--measure", "Cov@1", "--bootstrap", "200"]


def test_the_issues_rand_good_bad_case_through_the_engine(tmp_path, capsys):
    got = cli_json(capsys, *rand_good_bad(tmp_path), "--json")
    (r,) = got["systems"]
    means = {s: (m["reference"], m["other"]) for s, m in r["means"].items()}
    # by hand over t0-t3: humans bad 3/3 > good 2/3 > rand 1/3; judge good 1 > rand 2/3 > bad 1/3
    assert means == {"rand": (pytest.approx(1 / 3), pytest.approx(2 / 3)),
                     "good": (pytest.approx(2 / 3), pytest.approx(1.0)),
                     "bad": (pytest.approx(1.0), pytest.approx(1 / 3))}
    assert r["topics"] == ["t0", "t1", "t2", "t3"]
    assert r["left_out"] == {"without a value of every system from people": 1,      # t4
                             "without a value of every system from judge": 1}       # t5
    # tau: (good, rand) concordant, the two pairs with bad discordant: -1/3; tau_AP with the
    # humans the reference: judge order good, rand, bad; rand has good above it in the humans'
    # order too (1/1), bad neither (0/2): 2/2 * (1 + 0) - 1 = 0
    assert r["kendall_tau_b"]["value"] == pytest.approx(-1 / 3)
    assert r["tau_ap"]["value"] == pytest.approx(0.0)
    # every topic gives the same scores: every resample the same value
    assert r["kendall_tau_b"]["ci_low"] == r["kendall_tau_b"]["ci_high"] == pytest.approx(-1 / 3)
    # PPI: the people label t5 where the judge does not: not a subset, said
    assert r["ppi"] == {} and r["ppi_note"].startswith("no PPI")
    # each side's own topics: people's mean over t0-t3 and t5 (Cov 0: no run ranks it)
    people = next(s for s in got["scores"] if s["name"] == "people")
    assert people["means"]["bad"] == pytest.approx(4 / 5)


def test_ppi_where_the_humans_label_a_subset_of_the_judges_topics(tmp_path, capsys):
    argv = rand_good_bad(tmp_path)
    human = tmp_path / "human.jsonl"    # the humans label t0 and t1 only; the judge t0-t4
    human.write_text("".join(line + "\n" for line in human.read_text().splitlines()
                             if json.loads(line)["id"] in ("t0", "t1")))
    pytest.importorskip("ppi_py")
    got = cli_json(capsys, *argv, "--json")
    (r,) = got["systems"]
    assert r["ppi_note"].startswith("PPI: judge on its 5 topics, corrected by people on its 2")
    # every labelled topic scores the same: a constant human column, no interval
    assert "all 2 human values are" in r["ppi"]["good"]


# --- names never merge ------------------------------------------------------------------------

def test_two_inputs_of_one_name_are_refused_in_every_command(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    a, b = tmp_path / "x" / "bm25.run", tmp_path / "y" / "bm25.run"
    for p in (a, b):
        p.write_text(RUNS[0].read_text())
    line = f"two runs named 'bm25': {a} and {b} (name them apart: NAME=PATH)"
    for argv in (["agreement", "--labels", f"h={ANN1}", f"j={JUDGE}", "--run", a, b],
                 ["evaluate", "--qrel", CRUX / "paper" / "testb_div_qrels.txt", "--judge",
                  JUDGE, "--run", a, b],
                 ["crux-eval", "--qrel", CRUX / "paper" / "testb_div_qrels.txt", "--judge",
                  JUDGE, "--run", a, b]):
        assert main([str(x) for x in argv]) == 2
        assert capsys.readouterr().err.strip() == f"cruxflow: error: {line}"
    # annotators and label sets too
    q1, q2 = tmp_path / "x" / "qrels.jsonl", tmp_path / "y" / "qrels.jsonl"
    q1.write_text(ANN1.read_text())
    q2.write_text(ANN2.read_text())
    assert main(["agreement", "--human", str(q1), str(q2), "--judge", str(JUDGE)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"cruxflow: error: two annotators of humans named 'qrels': {q1} and {q2} (name them "
        "apart: NAME=PATH)")
    assert main(["agreement", "--labels", str(q1), str(q2)]) == 2
    assert "two label sets named 'qrels'" in capsys.readouterr().err
    # the issue's a.r0.run and a.r1.run: two runs, named a.r0 and a.r1
    r0, r1 = tmp_path / "a.r0.run", tmp_path / "a.r1.run"
    r0.write_text(RUNS[0].read_text())
    r1.write_text(RUNS[2].read_text())
    got = cli_json(capsys, "agreement", "--labels", f"h={ANN1}", f"j={JUDGE}", "--run", r0, r1,
                   "--json", "--bootstrap", "0")
    assert set(got["systems"][0]["means"]) == {"a.r0", "a.r1"}


def test_meta_eval_is_agreement_under_its_old_name(capsys):
    argv = ["--human", f"a1={ANN1}", f"a2={ANN2}", "--judge", str(JUDGE), "--bootstrap", "50"]
    assert main(["agreement", *argv]) == 0
    new = capsys.readouterr()
    assert main(["meta-eval", *argv]) == 0
    old = capsys.readouterr()
    assert old.out == new.out
    assert old.err.strip() == "cruxflow: note: cruxflow meta-eval is now cruxflow agreement " \
                              "(the same flags)"


def test_a_bootstrap_beyond_the_bound_is_refused_in_one_line(capsys):
    # three sets (NIST twice): 100,000 resamples x 1,472 items x 2 pairs a set
    assert main(["agreement", "--labels", f"NIST={NIST}", f"UMBRELA={UMBRELA}",
                 f"again={NIST}", "--bootstrap", "100000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("cruxflow: error: --bootstrap 100,000: 100,000 x 1,472 x 2 resamples x items "
                   "x pairs = 294,400,000 cells, more than 200,000,000 (gigabytes and minutes); "
                   "give fewer resamples")
    with pytest.raises(SystemExit) as exited:     # the flag's own bound: argparse refuses it
        main(["agreement", "--labels", f"NIST={NIST}", f"UMBRELA={UMBRELA}",
              "--bootstrap", "1000000"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == ("cruxflow agreement: error: argument --bootstrap: must be at most 100,000 (an "
                   "interval's ends are settled to three digits long before; the draws take "
                   "resamples x topics x 8 bytes), got 1000000 (see cruxflow agreement --help)")


# --- the labeling release's human Cov@10 of bm25: one number in every door ----------------------

def test_the_human_cov_of_bm25_is_one_number_in_every_door(tmp_path, capsys):
    import cruxflow

    clone = CRUX / "labeling_clone"
    a1 = clone / "results" / "annotator1" / "qrels_a1.jsonl"
    a2 = clone / "results" / "annotator2" / "qrels.jsonl"
    testb = clone / "annotator_1" / "crux_testb"
    # ingest (the annotators merged by the one rule, said) and evaluate
    assert main(["ingest", "--format", "crux", "--input", str(testb), "--collection",
                 str(clone / "annotator_1" / "documents"), "--judge", str(a1), str(a2),
                 "--output", str(tmp_path / "data")]) == 0
    assert "merged by mean (their mean, rounded half up)" in capsys.readouterr().out
    assert main(["evaluate", "--dataset", str(tmp_path / "data"), "--run",
                 str(testb / "bm25.run"), "--k", "10", "--json"]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    cov = next(r["Cov"] for r in evaluated["aggregate"] if str(r["k"]) == "10")
    assert main(["evaluate", "--dataset", str(tmp_path / "data"), "--run",
                 str(testb / "bm25.run"), "--k", "10"]) == 0
    assert ("human ratings of 2 annotators, merged by mean (their mean, rounded half up)"
            in capsys.readouterr().out)
    # the API, the two files read as one judgments
    api = cruxflow.evaluate(str(testb / "bm25.run"), [str(a1), str(a2)], ["Cov@10"])
    assert api["Cov@10"].mean() == pytest.approx(cov)
    # agreement: the humans' set scored by the engine, its rule named
    got = cli_json(capsys, "agreement", "--human", str(a1), str(a2), "--run",
                   str(testb / "bm25.run"), "--json", "--bootstrap", "0")
    (humans,) = got["scores"]
    assert humans["means"]["bm25"] == pytest.approx(cov)
    assert humans["source"] == "humans, merged by mean (their mean, rounded half up)"
    assert got["label_sets"]["humans"]["merge"] == "mean"
    assert cov == pytest.approx(0.5625)       # topic 3: 1/2, topic 13: 5/8 (the walk's test)
    # another rule is one number in every door too, and named
    assert main(["ingest", "--format", "crux", "--input", str(testb), "--collection",
                 str(clone / "annotator_1" / "documents"), "--judge", str(a1), str(a2),
                 "--judge-merge", "majority", "--output", str(tmp_path / "maj")]) == 0
    assert "merged by majority" in capsys.readouterr().out
    assert main(["evaluate", "--dataset", str(tmp_path / "maj"), "--run",
                 str(testb / "bm25.run"), "--k", "10", "--json"]) == 0
    majority = next(r["Cov"] for r in json.loads(capsys.readouterr().out)["aggregate"]
                    if str(r["k"]) == "10")
    got = cli_json(capsys, "agreement", "--human", str(a1), str(a2), "--run",
                   str(testb / "bm25.run"), "--merge", "majority", "--json", "--bootstrap", "0")
    assert got["scores"][0]["means"]["bm25"] == pytest.approx(majority)
    assert got["scores"][0]["source"].startswith("humans, merged by majority")


# --- leaderboards in every format ---------------------------------------------------------------

def test_every_leaderboard_format_reads_the_same_scores(tmp_path):
    from cruxflow.paper.leaderboards import read_leaderboard

    table = {"r1": {"11": 0.5, "12": 0.25}, "r2": {"11": 0.75, "12": 0.0}}
    folder = tmp_path / "trec_eval"           # trec_eval -q: a file per run, its runid and all
    folder.mkdir()
    for run, topics in table.items():
        (folder / f"{run}.txt").write_text(
            f"runid\tall\t{run}\n" + "".join(f"ndcg_cut_10\t{t}\t{v:.4f}\n"
                                             for t, v in topics.items())
            + f"ndcg_cut_10\tall\t{sum(topics.values()) / 2:.4f}\n")
    irm = tmp_path / "ir_measures"            # ir_measures -q: topic measure value
    irm.mkdir()
    for run, topics in table.items():
        (irm / f"{run}.tsv").write_text("".join(f"{t}\tnDCG@10\t{v}\n" for t, v in topics.items())
                                        + f"all\tnDCG@10\t{sum(topics.values()) / 2}\n")
    rows = [(r, t, v) for r, topics in table.items() for t, v in topics.items()]
    files = {
        "tot": "".join(f"{r} m {t} {v}\n" for r, t, v in rows),
        "autojudge ir_measures": "".join(f"{r} {t} m {v}\n" for r, t, v in rows),
        "ranking": "".join(f"{t} Q0 {r} 1 {v} m\n" for r, t, v in rows),
        "jsonl": "".join(json.dumps({"run_id": r, "topic_id": t, "measure": "m", "value": v})
                         + "\n" for r, t, v in rows),
    }
    got = {"trec_eval": read_leaderboard("x", folder), "ir_measures": read_leaderboard("x", irm)}
    for name, text in files.items():
        path = tmp_path / name.replace(" ", "_")
        path.write_text(text)
        got[name] = read_leaderboard("x", path)
    for name, scores in got.items():
        assert scores.per_topic == table, name
    tsv = tmp_path / "means.tsv"              # run<TAB>score: means only, no topic
    tsv.write_text("r1\t0.375\nr2\t0.5\n")
    assert read_leaderboard("x", tsv).means == {"r1": 0.375, "r2": 0.5}
    # tot or autojudge's ir_measures with non-numeric topics and no 'all': said, not guessed
    odd = tmp_path / "odd.txt"
    odd.write_text("r1 m a 0.5\nr2 m b 0.5\n")
    with pytest.raises(DataError, match="cannot tell the leaderboard format.*give --format"):
        read_leaderboard("x", odd)
    assert read_leaderboard("x", odd, fmt="tot").per_topic == {"r1": {"a": 0.5},
                                                               "r2": {"b": 0.5}}
    two = tmp_path / "two.tot"
    two.write_text("r1 m 1 0.5\nr1 n 1 0.4\n")
    with pytest.raises(DataError, match=r"holds 2 measures \(m, n\): give --measure"):
        read_leaderboard("x", two)


def test_ppi_of_each_system_by_hand():
    pytest.importorskip("ppi_py")
    from cruxflow.paper.system_agreement import Scores, compare_rankings

    # the judge scores 6 topics, the people 3 of them; classic PPI (lambda 1) of a system:
    # the judge's mean on the 3 unlabelled topics + the mean of (people - judge) on the
    # labelled ones
    judge = {"A": dict(zip("123456", [.5, .6, .7, .4, .5, .6], strict=True)),
             "B": dict(zip("123456", [.2, .3, .1, .2, .4, .3], strict=True)),
             "C": dict(zip("123456", [.9, .8, .7, .9, .6, .8], strict=True))}
    people = {s: {t: v - 0.1 + 0.05 * int(t) for t, v in judge[s].items() if t in "123"}
              for s in judge}
    r = compare_rankings(Scores("people", "m", per_topic=people),
                         Scores("judge", "m", per_topic=judge), n_resamples=50)
    assert r.ppi_note.startswith("PPI: judge on its 6 topics, corrected by people on its 3")
    for s in judge:
        unlabelled = [judge[s][t] for t in "456"]
        bias = [people[s][t] - judge[s][t] for t in "123"]
        assert r.ppi[s].estimate == pytest.approx(np.mean(unlabelled) + np.mean(bias))
        assert r.ppi[s].ci_low < r.ppi[s].estimate < r.ppi[s].ci_high
    assert r.topics == ["1", "2", "3"] and r.left_out == {
        "without a value of every system from people": 3,
        "without a value of every system from judge": 0}

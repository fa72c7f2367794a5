"""cruxflow meta-eval: the judge against annotators, item by item and system by system
(cruxflow.paper.meta_eval). Expected values are worked out by hand in the comments."""

import json
import re
from pathlib import Path

import pytest
from scipy import stats

from cruxflow.cli import main
from cruxflow.data.ingest.crux_common import read_ratings
from cruxflow.paper.meta_eval import agree, majority, meta_eval, read_human_ratings

pytest.importorskip("krippendorff")

DATA = Path(__file__).parent / "data" / "crux"
JUDGE = DATA / "paper" / "testb_judgements.jsonl"          # paper-era layout
ANN1 = DATA / "labels" / "annotator1" / "qrels.jsonl"       # the labeling tool's Task 2 export
ANN2 = DATA / "labels" / "annotator2" / "qrels.jsonl"
RUNS = [DATA / "paper" / f"{s}.run" for s in ("bm25", "dr_rankfirst", "oracle")]


def test_item_statistics_by_hand():
    items = [("t", "p", q) for q in range(6)]
    ref = dict(zip(items, [5, 4, 3, 2, 1, 0], strict=True))
    other = dict(zip(items, [4, 4, 2, 2, 0, 3], strict=True))
    a = agree(ref, other, eta=3)
    # at eta 3: ref 1 1 1 0 0 0, other 1 1 0 0 0 1
    assert (a.n, a.tp, a.fp, a.fn, a.tn) == (6, 2, 1, 1, 2)
    assert a.precision == pytest.approx(2 / 3) and a.recall == pytest.approx(2 / 3)
    assert a.exact == pytest.approx(2 / 6)
    assert a.kappa == pytest.approx((4 / 6 - 0.5) / 0.5)       # p_o 4/6, p_e 1/2
    # linear weights |i - j| / 5: observed mean distance against every pair of marginals
    r, o = list(ref.values()), list(other.values())
    observed = sum(abs(x - y) for x, y in zip(r, o, strict=True)) / 6
    expected = sum(abs(x - y) for x in r for y in o) / 36
    assert a.kappa_linear == pytest.approx(1 - observed / expected)
    assert 0 < a.alpha_ordinal < 1
    assert agree(ref, ref).alpha_ordinal == pytest.approx(1.0)
    assert a.warning == "only 6 items (< 30)"


def test_constant_columns_and_no_overlap_are_undefined_not_nan():
    items = [("t", "p", q) for q in range(4)]
    five = dict.fromkeys(items, 5)
    a = agree(five, five)
    assert a.exact == 1.0
    assert (a.kappa, a.kappa_linear, a.alpha_ordinal) == (None, None, None)
    assert a.recall == 1.0 and a.precision == 1.0
    none = agree(five, {("u", "p", 0): 1})
    assert none.n == 0 and none.warning == "no shared items"
    assert all(v is None for v in (none.exact, none.kappa, none.precision, none.recall))


def test_majority_is_the_lower_median():
    h = {"a": {("t", "p", 0): 2, ("t", "p", 1): 1}, "b": {("t", "p", 0): 4, ("t", "p", 1): 5},
         "c": {("t", "p", 1): 3}}
    assert majority(h) == {("t", "p", 0): 2, ("t", "p", 1): 3}


def test_real_exports_item_and_system_level():
    judge = read_ratings([JUDGE])
    humans = read_human_ratings([str(ANN1), str(ANN2)])
    runs = {p.stem: {} for p in RUNS}
    for p in RUNS:
        for line in p.read_text().splitlines():
            t, _, d, *_ = line.split()
            runs[p.stem].setdefault(t, []).append(d)
    res = meta_eval(judge, humans, runs=runs, n_resamples=200)
    first = res.items[0]
    # annotator1 (human, judge): (4,4) (1,0) (2,3) (3,2) (5,4) -> exact 1/5; 2/1/1/1 at eta 3
    assert (first.reference, first.n, first.exact) == ("annotator1", 5, pytest.approx(0.2))
    assert (first.tp, first.fp, first.fn, first.tn) == (2, 1, 1, 1)
    ceiling = res.items[-1]
    assert (ceiling.kind, ceiling.n, ceiling.kappa) == ("ceiling", 0, None)
    means = res.judge_scores.groupby("system")["Cov@10"].mean()
    # judge: testb-3 answerable q0 q1 q2, bm25 [1#2, 0#0] answers q0: 1/3; testb-7 [0#1, 0#0]
    # answers q0 of 2: 1/2
    assert means["bm25"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    human = res.human_scores.groupby("system")["Cov@10"].mean()
    # humans: testb-3 answerable q0 (0#0: 4) and q2 (2#3: 5), bm25 has 0#0: 1/2; testb-7
    # answerable q0 (1#2: 3) and q1 (1#2: 5, 0#1: 4), bm25 has 0#1: 1/2
    assert human["bm25"] == pytest.approx(0.5)
    assert [r.metric for r in res.ranks] == ["Cov@10", "alpha_nDCG_crux@10"]
    assert isinstance(res.ppi["bm25"], str) and "every one of the 2" in res.ppi["bm25"]


def test_cli_prints_counts_warnings_and_undefined(capsys):
    assert main(["meta-eval", "--judge", str(JUDGE), "--human", f"a1={ANN1}", f"a2={ANN2}",
                 "--run", *map(str, RUNS), "--bootstrap", "50"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\| judge +\| a1 +\| judge +\| +5 \| 0.200", out)
    assert "only 5 items (< 30)" in out and "no shared items" in out
    assert "undefined" in out and "nan" not in out.lower()
    assert "Kendall tau" in out and "tau_AP" in out
    assert main(["meta-eval", "--judge", str(JUDGE), "--human", str(ANN1), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["items"][0]["n"] == 5 and "systems" not in data


def test_human_file_in_a_judge_layout_and_bad_input(tmp_path, capsys):
    human = tmp_path / "h.jsonl"
    human.write_text('{"topic_id": "duc04-testb-3", "passage_id": "duc04-testb-3:0#0", '
                     '"ratings": [4, -1, 1]}\n')
    frame = read_human_ratings([f"me={human}"])
    assert sorted(zip(frame["question"], frame["rating"], strict=True)) == [(0, 4), (2, 1)]
    other = tmp_path / "o.jsonl"
    other.write_text('{"topic_id": "other-1", "passage_id": "x", "ratings": [4]}\n')
    assert main(["meta-eval", "--judge", str(JUDGE), "--human", str(other)]) == 2
    err = capsys.readouterr().err
    assert "no (passage, question) pair was rated by both" in err and err.count("\n") == 1
    far = tmp_path / "far.jsonl"
    far.write_text('{"id": "duc04-testb-3", "document": "duc04-testb-3:0#0", '
                   '"relevances": {"7": 3}}\n')
    assert main(["meta-eval", "--judge", str(JUDGE), "--human", str(far)]) == 2
    err = capsys.readouterr().err
    assert "far.jsonl: line 1: field 'question': question 7, but the judge rated 3" in err


def test_annotate_export_reads_with_its_own_annotator_names(tmp_path):
    export = tmp_path / "passage_ratings.jsonl"      # `cruxflow annotate --export`'s format
    rows = [("a", 0, 4), ("b", 0, 2), ("a", 2, 1)]
    export.write_text("".join(json.dumps(
        {"topic_id": "duc04-testb-3", "passage_id": "duc04-testb-3:0#0", "question": q,
         "annotator": a, "rating": r, "rationale": None, "review": False}) + "\n"
        for a, q, r in rows))
    res = meta_eval(read_ratings([JUDGE]), read_human_ratings([str(export)]))
    by = {(x.reference, x.other): x for x in res.items}
    # judge on 0#0: [4, 0, 0]; a: q0 4, q2 1 -> (4,4), (1,0); b: q0 2 -> (2,4)
    assert by[("a", "judge")].n == 2 and by[("a", "judge")].exact == 0.5
    assert by[("b", "judge")].n == 1 and by[("b", "judge")].exact == 0.0
    # majority of q0: a 4, b 2 -> the lower middle, 2: unanswerable at eta 3
    assert by[("(majority)", "judge")].fp == 1
    assert by[("a", "b")].n == 1 and by[("a", "b")].kind == "ceiling"


# --- the system level: the issue's rand / good / bad -------------------------------------------

# Three passages per topic and three questions; Cov@1 is the share of the questions the run's
# first passage answers. The judge finds A best (3 questions), then B (2), then C (1); the
# humans C (3), then A (2), then B (1). good ranks A first, bad is good with its scores negated
# (C first), rand puts B first.
JUDGE_RATINGS = {"A": [5, 4, 3], "B": [4, 3, 0], "C": [0, 0, 3]}
HUMAN_RATINGS = {"A": [4, 3, 1], "B": [0, 0, 5], "C": [3, 5, 4]}
ORDERS = {"good": "ABC", "bad": "CBA", "rand": "BCA"}


def issue_case(tmp_path: Path, runs=("rand", "good", "bad")) -> list[str]:
    judge, human = tmp_path / "judge.jsonl", tmp_path / "human.jsonl"
    topics = [f"t{i}" for i in range(4)]
    lines = [{"id": t, "docid": f"{t}:{p}", "rating": r} for t in topics
             for p, r in JUDGE_RATINGS.items()]
    judge.write_text("".join(json.dumps(x) + "\n" for x in lines))
    # two more labelled topics, both left out: t4, where the humans find nothing answerable,
    # and t5, which the judge never rated
    labels = [{"id": t, "docid": f"{t}:{p}", "rating": r} for t in topics
              for p, r in HUMAN_RATINGS.items()]
    labels += [{"id": "t4", "docid": f"t4:{p}", "rating": [0, 1, 2]} for p in "ABC"]
    labels += [{"id": "t5", "docid": "t5:A", "rating": [5, 5, 5]}]
    judge.write_text(judge.read_text() + "".join(
        json.dumps({"id": "t4", "docid": f"t4:{p}", "rating": [5, 5, 5]}) + "\n" for p in "ABC"))
    human.write_text("".join(json.dumps(x) + "\n" for x in labels))
    paths = []
    for name in runs:
        run = tmp_path / f"{name}.run"
        sign = -1 if name == "bad" else 1
        order = ORDERS["good"] if name == "bad" else ORDERS[name]
        run.write_text("".join(f"{t} Q0 {t}:{p} {r} {sign * (3 - r)} {name}\n"
                               for t in [*topics, "t4"] for r, p in enumerate(order)))
        paths.append(str(run))
    return ["meta-eval", "--judge", str(judge), "--human", f"people={human}", "--runs",
            *paths, "--k", "1", "--bootstrap", "200"]


def system_rows(out: str, metric: str) -> tuple[dict, dict, str, str]:
    block = out[out.index(f"\n{metric} over"):]
    block = block[:block.index("\n\n", 1)] if "\n\n" in block[1:] else block
    judge, human = {}, {}
    for m in re.finditer(r"^  (\w+) +([\d.]+) +([\d.]+)$", block, re.M):
        judge[m[1]], human[m[1]] = float(m[2]), float(m[3])
    return judge, human, block.splitlines()[1], block


def test_the_issues_rand_good_bad_case(tmp_path, capsys):
    from cruxflow.metrics.stats import tau_ap

    assert main(issue_case(tmp_path)) == 0
    out = capsys.readouterr().out
    judge, human, head, block = system_rows(out, "Cov@1")
    # by hand: judge good 3/3 > rand 2/3 > bad 1/3; humans bad 3/3 > good 2/3 > rand 1/3
    assert judge == pytest.approx({"bad": 0.333, "good": 1.0, "rand": 0.667}, abs=1e-3)
    assert human == pytest.approx({"bad": 1.0, "good": 0.667, "rand": 0.333}, abs=1e-3)
    assert "Cov@1 over 4 of the 6 labelled topics (left out: 1 not rated by the judge or in " \
           "no run, 1 no question the humans find answerable)" in block
    # tau from the printed means is scipy's: pairs (good, rand) concordant, the two with bad
    # discordant: -1/3; tau_AP: judge order good, rand, bad; rand has good above it in the
    # humans' order too (1/1), bad has neither (0/2): 2/2 * (1 + 0) - 1 = 0
    systems = sorted(judge)
    tau = stats.kendalltau([judge[s] for s in systems], [human[s] for s in systems]).statistic
    assert tau == pytest.approx(-1 / 3)
    assert "Kendall tau -0.333 [-0.333, -0.333]; tau_AP 0.000 [0.000, 0.000]; 3 runs" in block
    assert tau_ap([human[s] for s in systems], [judge[s] for s in systems]) == 0
    assert "intervals: 95% percentile bootstrap, 200 resamples of the 4 topics with " \
           "replacement" in block
    assert "-1.000" not in out.split("System level")[1]


def test_two_runs_and_every_run_tied(tmp_path, capsys):
    # good and rand: the same order on both sides (good first): +1, never -1
    assert main(issue_case(tmp_path, ("good", "rand"))) == 0
    _, _, _, block = system_rows(capsys.readouterr().out, "Cov@1")
    assert "Kendall tau 1.000 [no interval: fewer than 3 runs]; tau_AP 1.000 [no interval: " \
           "fewer than 3 runs]; 2 runs" in block
    # at k = 3 every run holds all three passages: every Cov ties on both sides: undefined
    args = issue_case(tmp_path)
    args[args.index("--k") + 1] = "3"
    assert main(args) == 0
    out = capsys.readouterr().out
    judge, human, _, block = system_rows(out, "Cov@3")
    assert set(judge.values()) == set(human.values()) == {1.0}
    assert ("Kendall tau undefined (the judge's and the humans' means tie for every run) "
            "[no interval: every resample undefined]; tau_AP undefined") in block
    assert "-1.000" not in out
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    cov = data["systems"][0]
    assert (cov["metric"], cov["tau"], cov["tau_ap"], cov["n_topics"]) == ("Cov@3", None, None, 4)
    assert cov["left_out"] == {"not_judged": 1, "no_human_answerable": 1,
                               "no_judge_answerable": 0}
    assert cov["bootstrap"]["tau_undefined"] == 200

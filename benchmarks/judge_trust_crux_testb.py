"""The packaged judge against the CRUX annotators: SmolLM2-135M (llama.cpp in process, the
ratings stage's own functions) rates what the CRUX labeling tool's annotators labelled
(DylanJoo/crux-labeling), and this script writes the judge's ratings beside the annotators'
exports so that ``cruxflow agreement`` and ``cruxflow ppi`` can compare them
(docs/judge-trust.md, "A real example").

* Task 2 (``annotations/annotator*/qrels.jsonl``): every (passage, sub-question) pair an
  annotator rated 0-5; the judge rates the same pairs (its other questions are -1, unrated).
* Task 1 (``annotations/annotator*/qlabels.jsonl``): every sub-question asked about the
  RAG reports written from the released bm25, dr_rankfirst and oracle contexts
  (``annotator_1/crux_testb/<system>.jsonl``, field ``response``, the text the tool showed);
  the judge rates each report against the same questions.

Both go through the LLM cache under ``--out``, so a re-run costs nothing. Then, per system, the
per-(topic, question) answerability of the report by the judge (rating >= eta) and by the
annotators' majority are written as ``item<TAB>value`` files, with a seeded half of the items
kept as "labelled", for ``cruxflow ppi``.

    .venv/bin/python benchmarks/judge_trust_crux_testb.py \
        [--repo DIR (default: $CRUXFLOW_LABELING_REPO)] [--out results/judge_trust] \
        [--threads 2] [--model SPEC] [--label-share 0.5] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import time
from collections import defaultdict
from pathlib import Path

from clones import clone

from cruxflow.cli import main as cli
from cruxflow.data.io import write_jsonl
from cruxflow.llm import JUDGMENT, LLMCache, LLMRunner
from cruxflow.llm.llamacpp import LlamaCppBackend
from cruxflow.stages.ratings import rate_texts
from cruxflow.weights import DEFAULT_GGUF

SYSTEMS = ("oracle", "bm25", "dr_rankfirst")
ANNOTATORS = ("annotator1", "annotator2", "annotator3")


class Repo:
    """Files of the labeling tool's repository: a work tree, or a bare git directory."""

    def __init__(self, path: Path):
        self.path = path

    def text(self, name: str) -> str:
        if (self.path / name).exists():
            return (self.path / name).read_text(encoding="utf-8")
        return subprocess.run(["git", "-C", str(self.path), "show", f"HEAD:{name}"],
                              check=True, capture_output=True, text=True).stdout

    def jsonl(self, name: str) -> list[dict]:
        return [json.loads(x) for x in self.text(name).splitlines() if x.strip()]

    def copy(self, name: str, to: Path) -> Path:
        to.parent.mkdir(parents=True, exist_ok=True)
        to.write_text(self.text(name), encoding="utf-8")
        return to


def report_id(system: str, topic: str) -> str:
    return topic if system == "oracle" else f"{system}_{topic}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path,
                    help="a clone of DylanJoo/crux-labeling, a work tree or a bare git "
                         "directory (default: $CRUXFLOW_LABELING_REPO)")
    ap.add_argument("--out", type=Path, default=Path("results/judge_trust"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=DEFAULT_GGUF)
    ap.add_argument("--eta", type=int, default=3)
    ap.add_argument("--label-share", type=float, default=0.5,
                    help="share of the (topic, question) items kept as labelled for ppi")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report-systems", default="bm25,dr_rankfirst",
                    help="systems whose Task 1 reports the judge rates (the oracle's too with "
                         "bm25,dr_rankfirst,oracle; each report is ~580 words)")
    args = ap.parse_args()
    repo = Repo(clone(args.repo, "CRUXFLOW_LABELING_REPO", "--repo",
                      "benchmarks/judge_trust_crux_testb.py"))
    out = args.out
    out.mkdir(parents=True, exist_ok=True)

    # the annotators' exports, copied as they are for agreement
    for a in ANNOTATORS:
        for name in ("qrels.jsonl", "qlabels.jsonl"):
            repo.copy(f"annotations/{a}/{name}", out / "labels" / a / name)
    questions = {r["qid"]: r["questions"]
                 for r in repo.jsonl("annotator_1/crux_testb/oracle.jsonl")}
    reports = {(s, r["qid"]): r["response"] for s in SYSTEMS
               for r in repo.jsonl(f"annotator_1/crux_testb/{s}.jsonl")}

    # Task 2: the pairs any annotator rated
    asked: dict[tuple[str, str], set[int]] = defaultdict(set)
    for a in ANNOTATORS:
        for r in repo.jsonl(f"annotations/{a}/qrels.jsonl"):
            asked[(r["id"], r["document"])] |= {int(q) for q, v in r["relevances"].items()
                                                if v != -1}
    passages = {pid: json.loads(repo.text(f"annotator_1/documents/{pid}"))["contents"]
                for _, pid in asked}
    # Task 1: the questions any annotator was asked about each report (-2: not asked)
    report_qs: dict[tuple[str, str], set[int]] = defaultdict(set)
    for a in ANNOTATORS:
        for r in repo.jsonl(f"annotations/{a}/qlabels.jsonl"):
            topic = next(t for t in questions if r["id"] == t or r["id"].endswith("_" + t))
            system = "oracle" if r["id"] == topic else r["id"][:-len(topic) - 1]
            report_qs[(system, topic)] |= {q for q, v in enumerate(r["answerability"])
                                           if v != -2}

    runner = LLMRunner(LlamaCppBackend(args.model, threads=args.threads, prompt_cache=True),
                       LLMCache(out / "llm_cache.sqlite"), batch_size=16)
    timings = {}

    def rate(keys, texts, asked_qs):
        items = [([questions[t][q] for q in sorted(asked_qs[k])], text)
                 for (k, t), text in zip(keys, texts, strict=True)]
        start = time.perf_counter()
        rated = rate_texts(items, runner, sampling=JUDGMENT, layout="passage_first")
        rows = []
        for (k, t), (ratings, _) in zip(keys, rated, strict=True):
            full = [-1] * len(questions[t])
            for q, r in zip(sorted(asked_qs[k]), ratings, strict=True):
                full[q] = r
            rows.append((k, t, full))
        return rows, time.perf_counter() - start, sum(len(i[0]) for i in items)

    keys = [((tid, pid), tid) for tid, pid in asked]
    rows, seconds, n = rate(keys, [passages[pid] for _, pid in asked], asked)
    timings["task2"] = (n, seconds)
    write_jsonl(out / "judge_passages.jsonl",
                [{"topic_id": t, "passage_id": k[1], "ratings": r} for k, t, r in rows])
    systems = args.report_systems.split(",")
    keys = [((s, t), t) for s, t in report_qs if s in systems]
    rows, seconds, n = rate(keys, [reports[k] for k, _ in keys], report_qs)
    timings["task1"] = (n, seconds)
    judge_reports = {k: r for k, _, r in rows}
    write_jsonl(out / "judge_reports.jsonl",
                [{"id": t, "docid": report_id(s, t), "rating": r}
                 for (s, t), r in judge_reports.items()])
    runner.close()

    # per system: (topic, question) items, the judge's answerability of the report and the
    # annotators' majority (ties count as answerable: 2 of 3 annotators rarely disagree 1-1)
    labels: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    for a in ANNOTATORS:
        for r in repo.jsonl(f"annotations/{a}/qlabels.jsonl"):
            topic = next(t for t in questions if r["id"] == t or r["id"].endswith("_" + t))
            system = "oracle" if r["id"] == topic else r["id"][:-len(topic) - 1]
            for q, v in enumerate(r["answerability"]):
                if v != -2:
                    labels[(system, topic, q)].append(v)
    rng = random.Random(args.seed)
    for s in systems:
        items = sorted(k for k in labels if k[0] == s)
        judge = {f"{t}:{q}": int(judge_reports[(s, t)][q] >= args.eta) for _, t, q in items}
        human = {f"{t}:{q}": int(2 * sum(labels[(s, t, q)]) >= len(labels[(s, t, q)]))
                 for _, t, q in items}
        kept = set(rng.sample(sorted(human), round(args.label_share * len(human))))
        for name, values in (("judge", judge), ("human_all", human),
                             ("human", {k: v for k, v in human.items() if k in kept})):
            (out / f"cov_y.{s}.{name}.tsv").write_text(
                "".join(f"{k}\t{v}\n" for k, v in values.items()))
    for task, (n, seconds) in timings.items():
        print(f"{task}: {n} prompts in {seconds:.1f} s ({runner.stats})")
    print(f"wrote {out}/judge_passages.jsonl, judge_reports.jsonl, labels/, cov_y.*.tsv")

    # what docs/judge-trust.md reports, from the files just written
    humans = [f"{a}={out / 'labels' / a / 'qrels.jsonl'}" for a in ANNOTATORS]
    print("\n$ cruxflow agreement (Task 2 pairs)")
    cli(["agreement", "--judge", str(out / "judge_passages.jsonl"), "--human", *humans,
         "--eta", str(args.eta)])
    print("\n$ cruxflow agreement (Task 1 reports)")
    cli(["agreement", "--human-reports", *(f"{a}={out / 'labels' / a / 'qlabels.jsonl'}"
                                           for a in ANNOTATORS),
         "--judge", str(out / "judge_reports.jsonl"), "--eta", str(args.eta)])
    for s in systems:
        human_all = [float(x.split("\t")[1])
                     for x in (out / f"cov_y.{s}.human_all.tsv").read_text().splitlines()]
        print(f"\n$ cruxflow ppi: {s}'s report, answerability per (topic, question), "
              f"{args.label_share:.0%} of the items labelled; all labels give "
              f"{sum(human_all) / len(human_all):.3f} over {len(human_all)} items")
        for method in ("ppi", "ppi++"):
            cli(["ppi", "--judge-values", str(out / f"cov_y.{s}.judge.tsv"), "--human-values",
                 str(out / f"cov_y.{s}.human.tsv"), "--method", method])


if __name__ == "__main__":
    main()

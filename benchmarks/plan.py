"""How long `cruxflow plan` takes on the paper preset over a Multi-News test split of its size.

No real Multi-News is shipped, so this writes a synthetic raw Multi-News test split of the
paper's size (5,622 clusters of 2-4 articles of 300-900 words, summaries of ~260 words) and a
synthetic DUC 2004 stand-in is left out (the train split too: both are dropped from the preset),
then plans presets/paper.yaml over it and prints the planning time and the plan.

    python benchmarks/plan.py [--topics 5622] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import yaml

from cruxflow.workflow.config import resolve, with_defaults
from cruxflow.workflow.plan import make_plan
from cruxflow.workflow.plan.rates import table_rate
from cruxflow.workflow.plan.report import Rates, plan_table

REPO = Path(__file__).resolve().parents[1]
WORDS = ("the river city council said on monday that flood water rose after heavy rain and "
         "officials warned residents near the dam to leave their homes before night").split()


def text(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(w + ("." if i % 18 == 17 else "") for i, w in enumerate(words))


def write_multinews(path: Path, topics: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with path.open("w") as f:
        for _ in range(topics):
            docs = [text(rng, rng.randint(300, 900)) for _ in range(rng.randint(2, 4))]
            f.write(json.dumps({"document": " ||||| ".join(docs),
                                "summary": text(rng, 260)}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=5622)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="cruxflow-plan-"))
    raw = work / "data" / "multi_news" / "test.jsonl"
    raw.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    write_multinews(raw, args.topics)
    print(f"synthetic Multi-News test: {args.topics} clusters, {raw.stat().st_size / 1e6:.0f} MB "
          f"in {time.perf_counter() - start:.1f} s")
    config = yaml.safe_load((REPO / "presets" / "paper.yaml").read_text())
    # Only Multi-News test is here: DUC 2004 and the train split are not.
    for name in ("duc04-test", "multi_news-train"):
        del config["datasets"][name]
        config["corpora"]["crux-all"]["datasets"].remove(name)
    config["rag"]["datasets"] = ["multi_news-test"]
    config["rag"]["topics"]["multi_news-test"] = str(
        REPO / config["rag"]["topics"]["multi_news-test"])
    config["llm"]["cache"] = str(work / "llm_cache.sqlite")
    config = resolve(with_defaults(config))
    start = time.perf_counter()
    plan = make_plan(config, root=work)
    took = time.perf_counter() - start
    rates = Rates(gpus=4, backends={name: table_rate(spec, "h100")
                                    for name, spec in config["llm"]["backends"].items()})
    print(plan_table(plan, rates), end="")
    print(f"planned in {took:.1f} s")


if __name__ == "__main__":
    main()

"""Benchmark: ``cruxflow export --format tevatron`` against the CoveR authors' script
(DylanJoo/CoveR ``src/multi-view-data-curation/sample-from-coverage.py``), row for row.

Writes a seeded random rated dataset (``--topics`` topics, 1-8 questions and 30-130 passages
each, ratings -1 and 0-5 with some topics that nothing answers at tau, 30-90% of the passages
rated) and a run over it (each topic's passages shuffled, some of another topic's or outside
the collection mixed in, cut at a random depth) into a temporary folder, then on the same
machine:

* the authors' script as they publish it, ``python sample-from-coverage.py --tau T
  --overwrite``, with ``CRUX_ROOT`` pointing at the inputs laid out as it reads them
  (``crux-researchy/runs/run.researchy-train-init-q.bm25+qwen3.clueweb22-b.txt`` and
  ``crux-researchy/judge/*.jsonl``); its ``crux.tools`` loaders (``load_ratings``,
  ``load_run_or_qrel``) are those of a DylanJoo/crux clone's ``crux/tools/generic/ir_utils.py``
  (a commit that reads a judge folder, 0007909 or later), its Researchy topics and
  sub-questions come from the inputs instead of the Hugging Face Hub, and ``push_to_hub`` is
  replaced by a write of each split to a JSON file;
* ``cruxflow export --format tevatron`` on the same dataset and run.

It checks that every split has the same topics, each with the same query text, the same
positives and the same negatives (as multisets: the script's ``list(set(...))`` order is its
own), ``answer`` null; prints the rows and passages compared, the differences (none expected),
and the wall time of each side. Timings on a shared machine are noisy.

    .venv/bin/python benchmarks/tevatron_vs_authors.py [--cover DIR] [--crux DIR]
        [--topics 300] [--tau 4] [--seed 1]

``--cover`` defaults to ``$CRUXFLOW_COVER_REPO``, ``--crux`` to ``$CRUXFLOW_CRUX_REPO``; a bare
git directory is exported with ``git archive``. Nothing of either is copied into this
repository.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from clones import clone, export

SCRIPT = Path("src") / "multi-view-data-curation" / "sample-from-coverage.py"
LOADERS = Path("crux") / "tools" / "generic" / "ir_utils.py"
RUN_NAME = "run.researchy-train-init-q.bm25+qwen3.clueweb22-b.txt"

# The authors' script in a child process: crux.tools made of the clone's two loaders, the
# Researchy topics read from files, push_to_hub writing JSON. Arguments: the loaders' file,
# the script, the topics and sub-questions JSON, the output folder, tau.
CHILD = r"""
import importlib.util, json, runpy, sys, types
from pathlib import Path
loaders, script, topics, subtopics, out, tau = sys.argv[1:7]
spec = importlib.util.spec_from_file_location("crux_loaders", loaders)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
tools = types.ModuleType("crux.tools")
tools.load_ratings, tools.load_run_or_qrel = module.load_ratings, module.load_run_or_qrel
researchy = types.ModuleType("crux.tools.researchy.ir_utils")
researchy.load_topic = lambda split="train": json.load(open(topics))
researchy.load_subtopics = lambda split="train", head_only=False: json.load(open(subtopics))
for name, m in (("crux", types.ModuleType("crux")), ("crux.tools", tools),
                ("crux.tools.researchy", types.ModuleType("crux.tools.researchy")),
                ("crux.tools.researchy.ir_utils", researchy)):
    sys.modules[name] = m
import datasets
def push_to_hub(self, repo_id, *args, **kwargs):
    Path(out).mkdir(parents=True, exist_ok=True)
    for split, ds in self.items():
        json.dump(ds.to_list(), open(Path(out) / f"{split}.json", "w"))
datasets.DatasetDict.push_to_hub = push_to_hub
sys.argv = [script, "--tau", tau, "--overwrite"]
runpy.run_path(script, run_name="__main__")
"""


def write_inputs(folder: Path, n_topics: int, seed: int) -> tuple[Path, Path]:
    """A rated dataset (cruxflow's layout) and a run, seeded."""
    from cruxflow.data.model import Dataset, Document, Passage, Topic

    rng = random.Random(seed)
    topics, docs, passages, ratings, lines = {}, {}, {}, {}, []
    for t in range(n_topics):
        tid = f"rt-{t}"
        n_q = rng.randint(1, 8)
        doc_ids = [f"{tid}:{d}" for d in range(5)]
        docs.update({d: Document(d, tid, f"document {d}") for d in doc_ids})
        pids = []
        for n in range(rng.randint(30, 130)):
            d = rng.randrange(5)
            pid = f"{tid}:{d}#{n}"
            passages[pid] = Passage(pid, f"passage {pid}", tid, f"{tid}:{d}")
            pids.append(pid)
        topics[tid] = Topic(tid, "summary", doc_ids, f"request {t}",
                            [f"question {i}?" for i in range(n_q)])
        high = 5 if rng.random() > 0.2 else 3       # some topics nothing answers at tau 4
        share = rng.choice([0.3, 0.6, 0.9])
        for pid in pids:
            if rng.random() < share:
                ratings[(tid, pid)] = [
                    rng.choice([-1, 0, 0, 1, 2, 3, 4, high, high]) if rng.random() < 0.5
                    else rng.choice([0, 0, 0, 1]) for _ in range(n_q)]
        rng.shuffle(pids)
        at = rng.randrange(len(pids))
        pids[at:at] = [f"rt-{(t + 1) % n_topics}:0#{k}" for k in range(3)]   # unrated here
        for rank, pid in enumerate(pids[:rng.randint(10, len(pids))], 1):
            lines.append(f"{tid} Q0 {pid} {rank} {1000 - rank * 0.5:.3f} random")
    Dataset(topics, docs, passages, ratings).save(folder / "dataset")
    (folder / "run.trec").write_text("\n".join(lines) + "\n")
    return folder / "dataset", folder / "run.trec"


def authors_layout(dataset_dir: Path, run: Path, folder: Path) -> tuple[Path, Path, Path]:
    """CRUX_ROOT as the script reads it, and the topics and sub-questions as JSON."""
    from cruxflow.data.model import Dataset

    ds = Dataset.load(dataset_dir, with_passages=False)
    root = folder / "crux_root"
    (root / "crux-researchy" / "runs").mkdir(parents=True)
    (root / "crux-researchy" / "judge").mkdir(parents=True)
    (root / "crux-researchy" / "runs" / RUN_NAME).write_bytes(run.read_bytes())
    with open(root / "crux-researchy" / "judge" / "ratings.jsonl", "w") as out:
        for (tid, pid), r in ds.ratings.items():
            out.write(json.dumps({"id": tid, "docid": pid, "rating": r}) + "\n")
    topics, subtopics = folder / "topics.json", folder / "subtopics.json"
    topics.write_text(json.dumps({t: x.query for t, x in ds.topics.items()}))
    subtopics.write_text(json.dumps({t: x.questions for t, x in ds.topics.items()}))
    return root, topics, subtopics


def compare(ours: Path, theirs: Path) -> tuple[int, int, list]:
    """(rows, passages, differences) of every split of the authors' but their ``train``
    alias of ``pos_20.neg_51``."""
    rows = passages = 0
    differences = []
    for f in sorted(theirs.glob("*.json")):
        if f.stem == "train":
            continue
        a = {r["query_id"]: r for r in json.loads(f.read_text())}
        mine = ours / f"{f.stem}.jsonl"
        b = {r["query_id"]: r for r in map(json.loads, mine.read_text().splitlines())} \
            if mine.exists() else {}
        if list(a) != list(b):
            differences.append((f.stem, "topics", sorted(set(a) ^ set(b))[:5]))
            continue
        for q, x in a.items():
            y = b[q]
            for key in ("positive_document_ids", "negative_document_ids"):
                if Counter(x[key]) != Counter(y[key]):
                    differences.append((f.stem, q, key))
                passages += len(x[key])
            if x["query_text"] != y["query_text"] or x["answer"] is not None \
                    or y["answer"] is not None:
                differences.append((f.stem, q, "query_text or answer"))
        rows += len(a)
    return rows, passages, differences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cover", type=Path, help="a DylanJoo/CoveR clone")
    parser.add_argument("--crux", type=Path, help="a DylanJoo/crux clone (0007909 or later)")
    parser.add_argument("--topics", type=int, default=300)
    parser.add_argument("--tau", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    name = "benchmarks/tevatron_vs_authors.py"
    cover = clone(args.cover, "CRUXFLOW_COVER_REPO", "--cover", name)
    crux = clone(args.crux, "CRUXFLOW_CRUX_REPO", "--crux", name)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        script = export(cover, tmp / "cover") / SCRIPT
        loaders = export(crux, tmp / "crux") / LOADERS
        for path in (script, loaders):
            if not path.is_file():
                sys.exit(f"{name}: no {path}")
        if "glob(" not in loaders.read_text():
            sys.exit(f"{name}: {loaders} reads no judge folder: a crux commit from 0007909 on")
        dataset, run = write_inputs(tmp, args.topics, args.seed)
        root, topics, subtopics = authors_layout(dataset, run, tmp / "authors")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", CHILD, str(loaders), str(script), str(topics),
                        str(subtopics), str(tmp / "theirs"), str(args.tau)], check=True,
                       env={**os.environ, "CRUX_ROOT": str(root),
                            "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
                            "HF_DATASETS_CACHE": str(tmp / "hf-cache")},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        theirs_s = time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cruxflow.cli", "export", "--format", "tevatron",
                        "--dataset", str(dataset), "--run", str(run), "--eta", str(args.tau),
                        "--output", str(tmp / "ours")], check=True, stdout=subprocess.DEVNULL)
        ours_s = time.perf_counter() - start
        rows, passages, differences = compare(tmp / "ours", tmp / "theirs")
    print(f"{args.topics} topics, tau {args.tau}, seed {args.seed}: {rows} rows and {passages} "
          f"passage ids compared, {len(differences)} differences")
    for d in differences[:10]:
        print("  ", d)
    print(f"the authors' script {theirs_s:.2f} s, cruxflow export {ours_s:.2f} s (each a new "
          "process, its imports included)")
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()

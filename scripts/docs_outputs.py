"""Write what the docs' commands print back into the docs: the outputs that README.md and
docs/*.md show under their command blocks (tests/docs_harness.py says which), run as
tests/test_docs.py runs them.

    .venv/bin/python scripts/docs_outputs.py                 # every doc
    .venv/bin/python scripts/docs_outputs.py docs/plan.md    # one
    .venv/bin/python scripts/docs_outputs.py --check         # say what would change, exit 1

A shown line whose printed line differs only in its numbers gets the printed numbers (the doc's
spacing, placeholders and cuts are kept); a shown line that no printed line is like is listed
with what the command printed, for a writer to fix by hand. Blocks that need a finished
workflow run make it (minutes) unless ``--keep-runs DIR`` holds it from an earlier call (then
``CRUXFLOW_DOCS_RUNS=DIR pytest -m docs`` uses the same runs).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import docs_harness as h  # noqa: E402
import workflow_runs  # noqa: E402


def _own_project(folder: Path) -> None:
    project = workflow_runs.make_own_project(Path(tempfile.mkdtemp(prefix="own-")))
    shutil.copytree(project, folder, symlinks=True)     # times kept: up to date where copied


MAKERS = {"demo": workflow_runs.make_demo_run, "own-project": _own_project}


def edits(block: h.Block, results: list[h.Result]) -> tuple[dict[int, tuple[str, str]], list]:
    """{doc line: (shown, should read)} and the shown lines no printed line is like."""
    changes, unmatched = {}, []
    pairs = [(r.command.shown, r.command.shown_at, r.output) for r in results]
    if block.shown is not None and results:
        pairs.append((block.shown, [block.shown_line + i for i in range(len(block.shown))],
                      "\n".join(r.output for r in results)))
    for shown, lines, printed in pairs:
        for want, new, line in zip(shown, h.align(shown, printed), lines, strict=True):
            if new is None:
                unmatched.append((line, want, printed))
            elif new != want:
                changes[line] = (want, new)
    return changes, unmatched


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("docs", nargs="*", type=Path, help="default: README.md and docs/*.md")
    ap.add_argument("--keep-runs", type=Path, metavar="DIR",
                    help="finished workflow runs kept here, made once")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 on a change")
    args = ap.parse_args(argv)
    docs = [p.resolve() for p in args.docs] or h.doc_paths()
    made: dict[str, Path] = {}
    scratch = Path(tempfile.mkdtemp(prefix="docs-outputs-"))

    def reuse(name: str) -> Path:
        if name not in made:
            folder = (args.keep_runs / name) if args.keep_runs else scratch / "runs" / name
            if not folder.is_dir():
                print(f"making the finished run {name!r} in {folder} (minutes)", flush=True)
                MAKERS[name](folder)
            made[name] = folder
        return made[name]

    status = 0
    for i, doc in enumerate(docs):
        blocks = h.parse(doc)
        if not any(b.runs and (b.shown is not None or any(c.shown for c in b.commands))
                   for b in blocks):
            continue
        done = h.run_doc(doc, scratch / f"doc{i}", reuse)
        lines = doc.read_text(encoding="utf-8").split("\n")
        changed = 0
        for block, results in done:
            for problem in h.failures(block, results):
                if "exited" in problem.split("\n")[0]:
                    print(problem, file=sys.stderr)
                    status = 1
            changes, unmatched = edits(block, results)
            for line, (want, new) in changes.items():
                lines[line - 1] = lines[line - 1].replace(want.strip(), new.strip(), 1)
                changed += 1
            for line, want, printed in unmatched:
                status = 1
                print(f"{doc.relative_to(ROOT)}:{line}: nothing printed is like: {want}\n"
                      f"  printed:\n" + "\n".join(f"    {x}" for x in printed.splitlines()[-30:]),
                      file=sys.stderr)
        if changed:
            print(f"{doc.relative_to(ROOT)}: {changed} shown line(s) "
                  f"{'differ' if args.check else 'written'}")
            if args.check:
                status = 1
            else:
                doc.write_text("\n".join(lines), encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())

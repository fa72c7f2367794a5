"""The docs are tests: every command block of README.md and docs/*.md runs as written in a
scratch copy of the checkout, and what it prints must hold every line the doc shows under it
(tests/docs_harness.py says how a doc is read). A block that CI cannot run says why in the doc
itself (``<!-- docs-test: skip="..." -->``). ``pytest -m docs`` runs these alone;
``python scripts/docs_outputs.py`` writes what the commands print back into the docs."""

from __future__ import annotations

import re

import docs_harness as h
import pytest

DOCS = h.doc_paths()


def _runs(path):
    return any(b.runs for b in h.parse(path))


# Unlabelled blocks that begin like a command must say what they are: ```bash / ```console to
# be run, ```text for a synopsis or a command shown but not run here.
LOOKS_LIKE_A_COMMAND = re.compile(r"^\s*(\$ |cruxflow |snakemake |python |pip |\.venv/|bash |cd )")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name if p.parent.name != "docs"
                         else f"docs/{p.name}")
def test_every_block_is_run_or_says_why_not(path):
    blocks = h.parse(path)     # a malformed marker or fence raises here
    unlabelled = [b.where for b in blocks if b.lang == "" and b.body
                  and LOOKS_LIKE_A_COMMAND.match(b.body[0])]
    assert not unlabelled, ("blocks that look like commands but have no language: label them "
                            "bash or console (run) or text (not run): " + ", ".join(unlabelled))
    for b in blocks:
        if b.lang in h.RUN_LANGS and b.runs:
            assert b.commands, f"{b.where}: a run block without a command"
        if "status" in b.marks:
            assert b.marks["status"].isdigit(), f"{b.where}: status must be a number"
        if "reuse" in b.marks:
            assert b.marks["reuse"] in h.REUSE, f"{b.where}: unknown run {b.marks['reuse']!r}"
        for test in re.findall(r"(tests/test_\w+\.py)(?:::(\w+))?", b.marks.get("skip", "")):
            # a test a reason names must be there
            source = h.ROOT / test[0]
            assert source.is_file(), f"{b.where}: {test[0]} does not exist"
            assert not test[1] or f"def {test[1]}(" in source.read_text(), \
                f"{b.where}: {test[0]} has no {test[1]}"
        if "after" in b.marks:
            assert any(c.text.lstrip().startswith(b.marks["after"]) for c in b.commands), \
                f"{b.where}: no command starts with {b.marks['after']!r}"


# The blocks' markers above are checked in the fast tier too; running the blocks runs the
# workflow (snakemake, the shared runs), the packaged model and Lucene in their shells.
@pytest.mark.docs
@pytest.mark.workflow
@pytest.mark.model
@pytest.mark.jvm
@pytest.mark.parametrize("path", [p for p in DOCS if _runs(p)],
                         ids=lambda p: p.name if p.parent.name != "docs" else f"docs/{p.name}")
def test_doc_blocks_run_as_written(path, tmp_path, request, docs_timings):
    runs = {}

    def reuse(name):
        if name not in runs:
            kept = h.kept_run(name)
            runs[name] = kept or request.getfixturevalue(h.REUSE[name])
        return runs[name]

    done = h.run_doc(path, tmp_path, reuse, on_block=lambda _b, rs: docs_timings.extend(rs))
    problems = [p for block, results in done for p in h.failures(block, results)]
    assert not problems, "\n\n".join(problems)

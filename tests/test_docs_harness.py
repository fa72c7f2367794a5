"""The docs harness's own logic (tests/docs_harness.py) on hand-written Markdown: which blocks
run, what output each shows, how shown and printed output compare, what the regenerating
script writes back, and that a broken block fails."""

from __future__ import annotations

import docs_harness as h
import pytest

DOC = '''# Title

Intro.

<!-- docs-test: skip="needs a GPU: vLLM" -->
```bash
vllm serve big-model
```

## Run

```bash
R=tests/data
cruxflow crux-eval --run $R/a.run \\
    --judge $R/judge
# a.run | P@10 | 0.2000 |
cruxflow other     # a trailing comment is not output

# a comment after a blank line is prose
echo hi
```

```python
import x
print(x.y)
# 0.666667
# comment right after the output: shown too
y = 1
# after a non-print line: prose
```

```
              Cov@10
topic
t1               1.0
```

<!-- docs-test: status="2" -->
```console
$ cruxflow ingest --input bad.jsonl \\
    --output out
cruxflow: error: bad.jsonl: line 3: field 'x': is empty
$ cd out
```

```text
cruxflow evaluate --dataset DIR [--k K]
```
'''


@pytest.fixture
def blocks(tmp_path):
    path = tmp_path / "doc.md"
    path.write_text(DOC)
    return h.parse(path)


def test_blocks_markers_sections_and_what_runs(blocks):
    assert [b.lang for b in blocks] == ["bash", "bash", "python", "console", "text"]
    gpu, shell, py, console, synopsis = blocks
    assert gpu.marks == {"skip": "needs a GPU: vLLM"} and not gpu.runs
    assert shell.runs and shell.section == "Run" and gpu.section == "Title"
    assert not synopsis.runs and synopsis.shown is None
    assert console.marks == {"status": "2"} and h.expected_status(console) == 2
    # the unlabelled block right after the python block is its output
    assert py.shown == ["              Cov@10", "topic", "t1               1.0"]
    assert py.shown_line == DOC.splitlines().index("              Cov@10") + 1


def test_commands_and_the_output_each_shows(blocks):
    shell, py, console = blocks[1], blocks[2], blocks[3]
    assert [c.text.split()[0] for c in shell.commands] == ["R=tests/data", "cruxflow",
                                                           "cruxflow", "echo"]
    crux = shell.commands[1]
    assert crux.text == "cruxflow crux-eval --run $R/a.run \\\n    --judge $R/judge"
    assert crux.shown == ["a.run | P@10 | 0.2000 |"]
    assert DOC.splitlines()[crux.shown_at[0] - 1] == "# a.run | P@10 | 0.2000 |"
    assert [c.shown for c in shell.commands[2:]] == [[], []]
    assert py.commands[0].shown == ["0.666667", "comment right after the output: shown too"]
    ingest, cd = console.commands
    assert ingest.text == "cruxflow ingest --input bad.jsonl \\\n    --output out"
    assert ingest.shown == ["cruxflow: error: bad.jsonl: line 3: field 'x': is empty"]
    assert cd.text == "cd out" and cd.shown == []


def test_compare_in_order_with_gaps_spaces_placeholders_and_ellipsis():
    printed = ("warning: 2 topics missing\n"
               "  alice:   http://127.0.0.1:8765/a/Xy9_k2/  (19 items)\n"
               "  bob: http://127.0.0.1:8765/a/Qq1/  (19 items)\n"
               "done in 3.2 s\n")
    assert h.compare(["alice: http://127.0.0.1:8765/a/<token>/ (19 items)", "...",
                      "done in 3.2 s"], printed) == []
    # numbers to their printed digits; order matters; every shown line must be there
    assert h.compare(["done in 3.20 s"], printed) == ["done in 3.20 s"]
    assert h.compare(["done in 3.2 s", "warning: 2 topics missing"], printed) == [
        "warning: 2 topics missing"]
    assert h.compare(["alice: http://127.0.0.1:8765/a/<token>/ (20 items)"], printed) == [
        "alice: http://127.0.0.1:8765/a/<token>/ (20 items)"]


def test_align_writes_back_the_printed_numbers_only():
    printed = "Cov@10           0.700000\nnDCG@10          0.512000\ntotal  7,169,446  1.5 d\n"
    shown = ["Cov@10           0.666667", "...", "nDCG@10          0.512000",
             "total  5,100,000  0.7 d", "a line nothing printed"]
    assert h.align(shown, printed) == ["Cov@10           0.700000", "...",
                                       "nDCG@10          0.512000",
                                       "total  7,169,446  1.5 d", None]


@pytest.mark.parametrize("marker, message", [
    ('<!-- docs-test: skip -->', "needs its reason"),
    ('<!-- docs-test: skip="" -->', "needs its reason"),
    ('<!-- docs-test: sikp="x" -->', "unknown docs-test marker"),
])
def test_bad_markers_are_refused(tmp_path, marker, message):
    path = tmp_path / "doc.md"
    path.write_text(f"# T\n\n{marker}\n```bash\necho hi\n```\n")
    with pytest.raises(h.DocsError, match=message):
        h.parse(path)


def test_a_marker_away_from_its_fence_is_refused(tmp_path):
    path = tmp_path / "doc.md"
    path.write_text('# T\n\n<!-- docs-test: skip="x" -->\nSome prose.\n\n```bash\necho\n```\n')
    with pytest.raises(h.DocsError, match="right above"):
        h.parse(path)


def test_a_broken_block_fails_and_a_good_one_passes(tmp_path):
    """Run for real: a shell per section, variables and folders carried from block to block,
    output compared, a wrong number and a failing command reported with the doc's line."""
    doc = tmp_path / "doc.md"
    doc.write_text('# T\n\n```bash\nX=41\nmkdir -p sub && cd sub\n```\n\n'
                   '```bash\necho $((X + 1)) "$(basename $PWD)"\n# 42 sub\n'
                   'echo 3.14\n# 3.15\n```\n\n'
                   '<!-- docs-test: status="3" -->\n```bash\nexit 3\n```\n\n'
                   '## Next section: back at the root\n\n```bash\ntest -d sub && pwd\n```\n\n'
                   '```\n/path/to/cruxflow\n```\n')
    root = tmp_path / "root"
    root.mkdir()
    problems = []
    for section in h.sections(h.parse(doc)):
        shell = h.Shell(root, h.environment(root))
        try:
            for block in section:
                problems += h.failures(block, h.run_block(block, shell))
        finally:
            shell.close()
    assert len(problems) == 1, problems
    assert problems[0].startswith("doc.md:11: `echo 3.14`") and "3.15" in problems[0]

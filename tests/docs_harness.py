"""The docs as tests: every command block of README.md and docs/*.md, run as written, and what it
prints compared with what the doc shows. ``tests/test_docs.py`` runs it; ``scripts/docs_outputs.py``
writes what the commands print back into the docs.

How a doc is read (docs/README.md, "The docs are tests", says the same for writers):

* **Run**: fenced blocks labelled ``bash``, ``sh``, ``console`` (its ``$ `` lines) or ``python``.
  Not run: ``json``, ``yaml``, ``text`` and unlabelled blocks (file contents, synopses, formulas).
* **Shown output**: in a ``console`` block, the lines under a ``$`` command; in a ``bash`` block,
  comment lines right under a command (no blank line between; ``# `` dropped); in a ``python``
  block, comment lines right under a line that calls ``print(``; and an unlabelled block right
  after a run block, with only blank lines between: what that whole block printed (label a
  block ``text`` to say it is not).
* **Markers**: an HTML comment on the line(s) above a block's fence, ``<!-- docs-test: KEY="VALUE"
  ... -->``: ``skip="why"`` (not run: what CI cannot have, a GPU, a cluster, a dataset that is not
  shipped; the reason is required), ``status="N"`` (its last command exits N: an error shown on
  purpose), ``serves`` (a command still running after it has been quiet for a few seconds, a
  server, is stopped with Ctrl-C, as its user would), ``reuse="NAME"`` (the finished workflow run
  NAME is copied in first: see :data:`REUSE`), ``after="TEXT"`` (with ``reuse``: copied in after
  the block's command that starts with TEXT, e.g. ``cruxflow init``), ``standin`` (the block's
  ``cruxflow fetch`` reaches the stand-ins of the Hugging Face Hub and of a mirror on 127.0.0.1,
  tests/hub_standin.py, serving fixture excerpts in place of the internet: started for the rest
  of the doc, with ``HF_ENDPOINT``, ``CRUXFLOW_MIRROR``, a scratch ``CRUXFLOW_HOME`` and the
  stand-in's registry of the excerpts, ``CRUXFLOW_REGISTRY``).
* **Where**: each doc in its own scratch copy of the checkout's tracked files (``git ls-files``)
  with the virtual environment linked; each section (``#`` heading) in one shell, its blocks in
  order, so ``cd`` and variables carry from one block to the next; the next section starts at
  the copy's root (files written stay).
* **Comparing**: every shown line must equal a printed line, in order; printed lines the doc
  leaves out are allowed (warnings, table rows), and a ``...`` line says so. Runs of spaces count
  as one; ``<...>`` in a shown line matches any text (a token, a URL's secret); the copy's path
  prints as ``/path/to/cruxflow``, and ``/path/to/cruxflow`` in a command is the copy. Numbers
  compare as printed, digit for digit.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER_ROOT = "/path/to/cruxflow"
RUN_LANGS = {"bash", "sh", "console", "python"}
MARKER = re.compile(r"<!--\s*docs-test:(.*?)-->", re.S)
KEYS = {"skip", "status", "serves", "reuse", "after", "standin"}
FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)\s*$")
HEADING = re.compile(r"^#{1,6} ")
QUIET_S = 4.0          # a serving command quiet this long after its last line is stopped
COMMAND_TIMEOUT_S = 900
# Finished workflow runs the blocks may reuse: name -> the pytest fixture that makes it
# (tests/workflow_runs.py). Its folder's contents are copied where the block runs.
REUSE = {"own-project": "own_project", "demo": "demo_folder"}
# For iterating on docs: finished runs kept in $CRUXFLOW_DOCS_RUNS/<name> (what
# ``scripts/docs_outputs.py --keep-runs DIR`` leaves there) are used instead of new ones. They
# are as fresh as their maker left them: CI never sets it.
KEPT_RUNS = "CRUXFLOW_DOCS_RUNS"


def kept_run(name: str) -> Path | None:
    folder = os.environ.get(KEPT_RUNS)
    if folder and (Path(folder) / name).is_dir():
        return Path(folder) / name
    return None


class DocsError(Exception):
    """A doc that the harness cannot read (a bad marker, an unclosed fence)."""


@dataclasses.dataclass
class Command:
    text: str                   # as written, continuation lines included
    line: int                   # 1-based line of the doc
    shown: list[str]            # the output the doc shows under it ([] if none)
    shown_at: list[int] = dataclasses.field(default_factory=list)   # their doc lines


@dataclasses.dataclass
class Block:
    doc: Path
    line: int                   # the fence's line, 1-based
    lang: str
    body: list[str]
    section: str
    marks: dict[str, str]
    shown: list[str] | None = None       # an output block right after this one
    shown_line: int | None = None        # the doc line of its first line
    commands: list[Command] = dataclasses.field(default_factory=list)

    @property
    def runs(self) -> bool:
        return self.lang in RUN_LANGS and "skip" not in self.marks

    @property
    def docname(self) -> str:
        return str(self.doc.relative_to(ROOT)) if self.doc.is_relative_to(ROOT) else self.doc.name

    @property
    def where(self) -> str:
        return f"{self.docname}:{self.line}"


def doc_paths(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def parse_marks(text: str, where: str) -> dict[str, str]:
    marks = {}
    for m in re.finditer(r'(\w+)(?:="([^"]*)")?', text):
        key, value = m.group(1), m.group(2)
        if key not in KEYS:
            raise DocsError(f"{where}: unknown docs-test marker {key!r} (known: {sorted(KEYS)})")
        marks[key] = value if value is not None else ""
    if "skip" in marks and not marks["skip"].strip():
        raise DocsError(f'{where}: docs-test skip needs its reason: skip="needs a GPU: ..."')
    return marks


def parse(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with markers, sections and shown outputs."""
    lines = path.read_text(encoding="utf-8").splitlines()
    name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    blocks: list[Block] = []
    section, pending, pending_line, i = "", None, 0, 0
    last_end = -10
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence is None:
            if HEADING.match(line):
                section = line.lstrip("#").strip()
            if line.lstrip().startswith("<!-- docs-test"):    # a marker is a line of its own
                text = line
                while "-->" not in text and i + 1 < len(lines):
                    i += 1
                    text += "\n" + lines[i]
                pending = parse_marks(MARKER.search(text).group(1), f"{name}:{i + 1}")
                pending_line = i
            elif line.strip() and pending is not None and i > pending_line:
                raise DocsError(f"{name}:{pending_line + 1}: a docs-test marker must be "
                                f"right above a block's fence")
            i += 1
            continue
        indent, ticks, lang = fence.groups()
        start = i
        i += 1
        body = []
        while i < len(lines) and not (lines[i].strip() == ticks and lines[i].startswith(indent)):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        if i == len(lines):
            raise DocsError(f"{name}:{start + 1}: unclosed code fence")
        lang = lang.lower()
        only_blank_between = all(not x.strip() for x in lines[last_end + 1:start])
        prev = blocks[-1] if blocks else None
        if (lang == "" and pending is None and prev is not None and only_blank_between
                and prev.lang in RUN_LANGS and prev.shown is None):
            prev.shown, prev.shown_line = body, start + 2
        else:
            block = Block(path, start + 1, lang, body, section, pending or {})
            block.commands = split_commands(block)
            blocks.append(block)
        pending, last_end = None, i
        i += 1
    return blocks


def _logical_lines(body: list[str], first_line: int, prompt: str | None):
    """(text, doc line, kind) per logical line; kind is 'cmd', 'comment', 'blank' or 'out'."""
    i = 0
    while i < len(body):
        raw = body[i]
        if prompt is not None:                      # console: `$ ` starts a command
            if not raw.startswith(prompt.rstrip()) or not raw.startswith(prompt) and \
                    raw.strip() != prompt.strip():
                yield raw, first_line + i, "out"
                i += 1
                continue
            raw = raw[len(prompt):]
        stripped = raw.strip()
        if not stripped:
            yield raw, first_line + i, "blank"
            i += 1
            continue
        if stripped.startswith("#"):
            yield raw, first_line + i, "comment"
            i += 1
            continue
        text, line = raw, first_line + i
        while text.rstrip().endswith("\\") and i + 1 < len(body):
            i += 1
            nxt = body[i]
            if prompt is not None and nxt.startswith(prompt):
                nxt = nxt[len(prompt):]
            text += "\n" + nxt
        yield text, line, "cmd"
        i += 1


def split_commands(block: Block) -> list[Command]:
    if block.lang not in RUN_LANGS:
        return []
    first = block.line + 1
    if block.lang == "python":
        cmd = Command("\n".join(block.body), first, [])
        after_print = False
        for n, raw in enumerate(block.body):
            s = raw.strip()
            if s.startswith("#") and after_print:
                cmd.shown.append(_uncomment(s))
                cmd.shown_at.append(first + n)
                continue
            after_print = "print(" in raw and not s.startswith("#")
        return [cmd]
    commands: list[Command] = []
    prompt = "$ " if block.lang == "console" else None
    last_kind = "blank"
    for text, line, kind in _logical_lines(block.body, first, prompt):
        if kind == "cmd":
            commands.append(Command(text, line, []))
        elif kind == "out" and commands:
            commands[-1].shown.append(text)
            commands[-1].shown_at.append(line)
        elif kind == "comment" and commands and last_kind in ("cmd", "shown"):
            commands[-1].shown.append(_uncomment(text.strip()))
            commands[-1].shown_at.append(line)
            kind = "shown"
        last_kind = kind
    return commands


def _uncomment(s: str) -> str:
    return s[2:] if s.startswith("# ") else s[1:]


# ----------------------------------------------------------------------------- comparing

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def normalise(line: str) -> str:
    return " ".join(ANSI.sub("", line).split())


def _pattern(shown: str) -> re.Pattern:
    parts = re.split(r"(<[^<>]*>)", normalise(shown))
    regex = "".join(".*?" if p.startswith("<") and p.endswith(">") and len(p) > 2
                    else re.escape(p) for p in parts)
    return re.compile(regex + r"\Z")


def is_ellipsis(line: str) -> bool:
    return line.strip() in ("...", "…", "[...]")


def compare(shown: list[str], printed: str) -> list[str]:
    """The shown lines that do not appear in ``printed`` in order ([] when all do)."""
    actual = [normalise(x) for x in printed.splitlines()]
    actual = [x for x in actual if x]
    missing, pos = [], 0
    for want in shown:
        if is_ellipsis(want) or not normalise(want):
            continue
        pattern = _pattern(want)
        for j in range(pos, len(actual)):
            if pattern.match(actual[j]):
                pos = j + 1
                break
        else:
            missing.append(want)
    return missing


def align(shown: list[str], printed: str) -> list[str | None]:
    """What each shown line should read to match ``printed``: itself where it matches, the
    same line with the printed numbers where only numbers differ (what ``scripts/docs_outputs.py``
    writes back), None where no printed line is like it."""
    actual = [normalise(x) for x in printed.splitlines()]
    actual = [x for x in actual if x]
    out: list[str | None] = []
    pos = 0
    for want in shown:
        if is_ellipsis(want) or not normalise(want):
            out.append(want)
            continue
        exact = _pattern(want)
        hit = next((j for j in range(pos, len(actual)) if exact.match(actual[j])), None)
        if hit is not None:
            out.append(want)
            pos = hit + 1
            continue
        masked = _mask(want)
        hit = None if "<" in want else next(
            (j for j in range(pos, len(actual)) if _mask(actual[j]) == masked), None)
        if hit is None:
            out.append(None)
            continue
        numbers = iter(NUMBER.findall(actual[hit]))
        out.append(NUMBER.sub(lambda _m, it=numbers: next(it), want))
        pos = hit + 1
    return out


NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?")


def _mask(line: str) -> str:
    return NUMBER.sub("#", normalise(line))


# ----------------------------------------------------------------------------- running

@dataclasses.dataclass
class Result:
    block: Block
    command: Command
    output: str
    status: int
    seconds: float
    stopped: bool = False       # a serving command stopped with Ctrl-C


def scratch_copy(dest: Path, root: Path = ROOT) -> Path:
    """The checkout's files (tracked, and untracked ones git does not ignore, as they are in the
    working tree) under ``dest``, with the virtual environment linked in."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=root, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = root / name
        if not src.exists():        # deleted in the working tree, not yet in git
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target, follow_symlinks=False)
    venv = Path(sys.prefix)
    if not (dest / ".venv").exists():
        (dest / ".venv").symlink_to(venv)
    return dest


def environment(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env.update(PATH=bin_dir + os.pathsep + env.get("PATH", ""), PYTHONPATH=str(root),
               PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", HF_DATASETS_CACHE=str(root / "hf-datasets-cache"),
               COLUMNS="200", NO_COLOR="1", PYTHONWARNINGS="ignore::DeprecationWarning")
    env.pop("CRUX_ROOT", None)
    # a pytest run inside is its own session, not one of this session's xdist workers
    for key in [k for k in env if k.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))]:
        env.pop(key)
    return env


class Shell:
    """One shell per doc section: every command runs in a fresh ``bash`` that starts where the
    previous one ended (its folder, its variables), so each command's output, status and time
    are its own and a server can be stopped alone."""

    def __init__(self, root: Path, env: dict[str, str]):
        self.root, self.env = root, env
        self.state = Path(tempfile.mkstemp(prefix="docs-shell-", suffix=".sh")[1])
        self.state.write_text(f"cd {shlex.quote(str(root))}\n")

    def cwd(self) -> Path:
        lines = self.state.read_text().splitlines()
        return Path(shlex.split(lines[-1])[1]) if lines else self.root

    def copy_in(self, run: Path) -> None:
        """A finished run's files into the current folder, their times kept (so that Snakemake
        finds its outputs newer than their inputs, as they were)."""
        shutil.copytree(run, self.cwd(), symlinks=True, dirs_exist_ok=True)

    def close(self):
        self.state.unlink(missing_ok=True)

    def script(self, command: str) -> str:
        state = shlex.quote(str(self.state))
        return (f"source {state} 2>/dev/null\n"
                f"trap '{{ declare -p | grep -v -E \"^declare -[a-zA-Z]*r\"; "
                f"echo cd \\\"$PWD\\\"; }} > {state} 2>/dev/null' EXIT\n"
                f"{command}\n")

    def run(self, command: str, *, serves: bool = False, stdin: str | None = None,
            timeout: float = COMMAND_TIMEOUT_S) -> tuple[str, int, bool]:
        command = command.replace(PLACEHOLDER_ROOT, str(self.root))
        proc = subprocess.Popen(["bash", "-c", self.script(command)], cwd=self.root,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.PIPE if stdin is not None else
                                subprocess.DEVNULL, start_new_session=True)
        if stdin is not None:
            proc.stdin.write(stdin.encode())
            proc.stdin.close()
        chunks: list[bytes] = []
        os.set_blocking(proc.stdout.fileno(), False)
        start = last = time.monotonic()
        stopped = False
        while True:
            data = proc.stdout.read()
            if data:
                chunks.append(data)
                last = time.monotonic()
            if proc.poll() is not None:
                rest = proc.stdout.read()
                if rest:
                    chunks.append(rest)
                break
            now = time.monotonic()
            if serves and chunks and now - last > QUIET_S:
                os.killpg(proc.pid, signal.SIGINT)        # Ctrl-C, as its user would
                stopped = True
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            elif now - start > timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                chunks.append(f"\n[docs harness: killed after {timeout:.0f} s]\n".encode())
                break
            time.sleep(0.05)
        output = b"".join(chunks).decode(errors="replace")
        output = output.replace(str(self.root), PLACEHOLDER_ROOT)
        return output, (0 if stopped else proc.returncode), stopped


def run_block(block: Block, shell: Shell, reuse=None) -> list[Result]:
    """Run one block's commands in ``shell``, stopping at the first that fails. ``reuse(name)``
    gives the folder of a finished run that a ``reuse`` marker names."""
    serves = "serves" in block.marks
    after = block.marks.get("after")
    if "reuse" in block.marks and not after:
        shell.copy_in(reuse(block.marks["reuse"]))
    results = []
    if block.lang == "python":
        cmd = block.commands[0]
        started = time.monotonic()
        out, status, _ = shell.run("python -", stdin=cmd.text + "\n")
        results.append(Result(block, cmd, out, status, time.monotonic() - started))
        return results
    for cmd in block.commands:
        started = time.monotonic()
        out, status, stopped = shell.run(cmd.text, serves=serves)
        results.append(Result(block, cmd, out, status, time.monotonic() - started, stopped))
        if status != 0:
            break
        if after and cmd.text.lstrip().startswith(after):
            shell.copy_in(reuse(block.marks["reuse"]))
    return results


def expected_status(block: Block) -> int:
    return int(block.marks.get("status") or 0)


def failures(block: Block, results: list[Result]) -> list[str]:
    """What went wrong in one block, as lines for a test failure ([] when nothing did)."""
    problems = []
    want = expected_status(block)
    for r in results:
        last = r is results[-1] and len(results) == len(block.commands)
        status_ok = r.status == (want if last else 0) or (last and want == 0 and r.status == 0)
        if not status_ok:
            problems.append(f"{block.docname}:{r.command.line}: `{_short(r.command.text)}` "
                            f"exited {r.status} (expected {want if last else 0}):\n"
                            f"{_tail(r.output)}")
            return problems
        missing = compare(r.command.shown, r.output)
        if missing:
            problems.append(f"{block.docname}:{r.command.line}: `{_short(r.command.text)}` "
                            f"printed no line matching:\n  " + "\n  ".join(missing) +
                            f"\nit printed:\n{_tail(r.output)}")
    if block.shown is not None and results:
        printed = "\n".join(r.output for r in results)
        missing = compare(block.shown, printed)
        if missing:
            problems.append(f"{block.docname}:{block.shown_line}: the output shown under "
                            f"{block.where} has lines nothing printed:\n  " +
                            "\n  ".join(missing) + f"\nit printed:\n{_tail(printed)}")
    return problems


def _short(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) < 100 else one[:97] + "..."


def _tail(text: str, n: int = 40) -> str:
    lines = text.rstrip().splitlines()
    cut = lines[-n:]
    return ("    ...\n" if len(lines) > n else "") + "\n".join("    " + x for x in cut)


def start_standin(env: dict[str, str], workdir: Path):
    """The stand-ins of the hub and of a mirror (``standin`` marker), and what a shell needs to
    reach them, set in ``env``; the caller stops what this returns."""
    from hub_standin import StandIn, write_registry

    standin = StandIn().start()
    env.update(HF_ENDPOINT=standin.hub_url, CRUXFLOW_MIRROR=standin.mirror_url,
               CRUXFLOW_HOME=str(workdir / "cruxflow-home"), HF_HUB_DISABLE_TELEMETRY="1",
               HF_HUB_CACHE=str(workdir / "hf-cache"),
               CRUXFLOW_REGISTRY=str(write_registry(workdir / "standin-registry.toml")))
    for offline in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):  # huggingface_hub reads both:
        env.pop(offline, None)      # the stand-in is on 127.0.0.1, not the internet
    return standin


def run_doc(path: Path, workdir: Path, reuse, on_block=None) -> list[tuple[Block, list[Result]]]:
    """Run a doc's blocks in a scratch copy under ``workdir``, one shell per section; a section
    stops at its first block that fails (the rest builds on it). ``on_block(block, results)``
    is called after each block."""
    root = scratch_copy(workdir / "cruxflow")
    env = environment(root)
    done = []
    standin = None
    try:
        for section in sections(parse(path)):
            shell = Shell(root, env)
            try:
                for block in section:
                    if not block.runs:
                        continue
                    if "standin" in block.marks and standin is None:
                        standin = start_standin(env, workdir)
                    results = run_block(block, shell, reuse)
                    done.append((block, results))
                    if on_block:
                        on_block(block, results)
                    if failures(block, results):
                        break
            finally:
                shell.close()
    finally:
        if standin is not None:
            standin.stop()
    return done


def sections(blocks: list[Block]) -> list[list[Block]]:
    out: list[list[Block]] = []
    for b in blocks:
        if not out or out[-1][0].section != b.section:
            out.append([])
        out[-1].append(b)
    return out

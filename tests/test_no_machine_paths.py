"""No tracked file names a path of the machine it was written on.

A path into one machine's work folder or a user's home folder works on that machine only: a
test that reads it passes there and is skipped (or fails) everywhere else, a benchmark's default
sends a user to a folder they do not have. What needs a clone of another repository names it by
an environment variable or a flag instead (docs/released-data.md, "Checks that need the
authors' repositories").

The rule: an absolute path whose first folder is one where a machine keeps users' and build
files (:data:`MACHINE_ROOTS`: home folders, temporary folders, work and mount points, package
mirrors), or that starts with this checkout's own folder or the user's home, written where a
path starts (not inside a URL or after ``~``, ``$VAR`` or another path). Generic system paths
(``/usr/``, ``/etc/``, ``/dev/``, ``/proc/``) are not machine-specific and pass. A literal that
is an obviously generic example goes in :data:`ALLOWED` with the file and the reason.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# First folders of absolute paths that belong to one machine (its users, builds and mirrors).
MACHINE_ROOTS = ("work", "root", "home", "tmp", "Users", "mnt", "opt", "srv", "scratch",
                 "var/folders", "var/tmp")
# Not inside a word, a URL or a longer path, nor after ~, $HOME or ${VAR}.
_START = r"(?<![\w.~$}/\-])"
PATTERN = re.compile(_START + "/(?:" + "|".join(map(re.escape, MACHINE_ROOTS))
                     + r")/[^\s'\"`)\]},;]*")

# (file, literal): generic examples that look like machine paths, each with why it may stay.
ALLOWED: dict[tuple[str, str], str] = {}

# Variables naming clones of the authors' repositories; docs/released-data.md lists each.
CLONE_VARIABLE = re.compile(r"\bCRUXFLOW_[A-Z]+_REPO\b")
CLONE_DOC = REPO / "docs" / "released-data.md"


def machine_paths(text: str, home: str | None = None, checkout: str | None = None) -> list[str]:
    """The machine paths ``text`` names (see the module's docstring)."""
    found = PATTERN.findall(text)
    for own in (checkout, home):
        if own and own != "/":
            found += re.findall(_START + re.escape(own.rstrip("/")) + r"(?=/|\b)[^\s'\"`)]*",
                                text)
    return found


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], check=True,
                             capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: no list of tracked files")
    return [REPO / name for name in out.decode().split("\0") if name]


def text_of(path: Path) -> str | None:
    """The file's text, or None for a binary file (a NUL byte in its first 8 KiB)."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):   # deleted in the work tree, a submodule
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def at(root: str, rest: str) -> str:
    """An absolute path under ``root``, built so that this file names none itself."""
    return f"/{root}/{rest}"


def test_the_rule_catches_machine_paths_and_lets_generic_ones_pass():
    mirror = at("work", ".mirror/DylanJoo+LANCER/repo")
    assert machine_paths(f'MIRROR = Path("{mirror}")') == [mirror]
    assert machine_paths(f"default={at('home', 'alice/crux')}, cache {at('tmp', 'x.db')}") == [
        at("home", "alice/crux"), at("tmp", "x.db")]
    assert machine_paths(f"see {at('root', 'nltk_data')} and '{at('opt', 'wheels')}'") == [
        at("root", "nltk_data"), at("opt", "wheels")]
    assert machine_paths(f"cd {at('mnt', 'data/runs')}") == [at("mnt", "data/runs")]
    # not machine paths: URLs, paths under ~ or a variable, relative and system paths
    for fine in ("https://example.org" + at("home", "index.html"), "~" + at("work", "crux"),
                 "$HOME" + at("tmp", "x"), "${CRUX_ROOT}" + at("home", "x"),
                 "results" + at("tmp", "x"), at("usr", "share/dict"), at("etc", "hosts"),
                 "a" + at("work", "b"), "tmp_path / 'work/'", "/dev/null"):
        assert machine_paths(fine) == [], fine
    # this checkout's own folder and the user's home, wherever they are
    checkout = at("srv2", "me/cruxflow")
    assert machine_paths(f"at {checkout}/tests", checkout=checkout) == [f"{checkout}/tests"]
    assert machine_paths(f"at {checkout}2", checkout=checkout) == []
    assert machine_paths(f"in {at('data', 'u7/x')}", home=at("data", "u7")) == [
        at("data", "u7/x")]


def test_no_tracked_file_names_a_path_of_the_machine():
    home = os.path.expanduser("~")
    found = []
    for path in tracked_files():
        text = text_of(path)
        if text is None:
            continue
        rel = path.relative_to(REPO).as_posix()
        for lineno, line in enumerate(text.splitlines(), 1):
            for hit in machine_paths(line, home=home, checkout=str(REPO)):
                if (rel, hit) not in ALLOWED:
                    found.append(f"{rel}:{lineno}: {hit}")
    assert found == [], ("tracked files name paths of one machine; name a clone by an "
                         "environment variable or a flag (docs/released-data.md), or add a "
                         "generic example to ALLOWED with its reason:\n" + "\n".join(found))


def test_every_allowed_literal_is_still_there():
    for (rel, literal), why in ALLOWED.items():
        assert why, (rel, literal)
        assert literal in (REPO / rel).read_text(encoding="utf-8"), (rel, literal)


def test_every_clone_variable_is_documented():
    used = set()
    for path in tracked_files():
        if path == CLONE_DOC or path.suffix not in (".py", ".sh", ".md", ".yaml", ".smk"):
            continue
        text = text_of(path)
        if text is not None:
            used |= set(CLONE_VARIABLE.findall(text))
    documented = set(CLONE_VARIABLE.findall(CLONE_DOC.read_text(encoding="utf-8")))
    assert used, "no CRUXFLOW_*_REPO variable found: is the pattern stale?"
    assert used - documented == set(), (
        f"document these in {CLONE_DOC.relative_to(REPO)}: {sorted(used - documented)}")
    assert documented - used == set(), f"documented but used nowhere: {sorted(documented - used)}"

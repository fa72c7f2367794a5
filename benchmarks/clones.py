"""Where the benchmarks find the CRUX authors' repositories: a clone named by a flag or, by
default, by one environment variable per repository (docs/released-data.md, "Checks that need
the authors' repositories", lists them; tests/test_no_machine_paths.py checks that the list and
the code agree). A clone is a work tree; a bare git directory (``git clone --bare``) works too,
read at its HEAD."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# variable -> the repository it names
CLONES = {
    "CRUXFLOW_CRUX_REPO": "DylanJoo/crux (a commit with crux/evaluation/rac_eval.py; for "
                          "tevatron_vs_authors.py, one whose loaders read a judge folder, "
                          "0007909 or later)",
    "CRUXFLOW_COVER_REPO": "DylanJoo/CoveR",
    "CRUXFLOW_LABELING_REPO": "DylanJoo/crux-labeling",
    "CRUXFLOW_LANCER_REPO": "DylanJoo/LANCER",
}


def clone(given: Path | None, variable: str, flag: str, script: str) -> Path:
    """``given`` (the flag's value) or the path ``variable`` names; without either the script
    stops, saying how to name one."""
    if given is None and os.environ.get(variable):
        given = Path(os.environ[variable])
    if given is None:
        sys.exit(f"{script}: needs a clone of {CLONES[variable]}: pass {flag} DIR or set "
                 f"{variable}")
    if not given.is_dir():
        sys.exit(f"{script}: {given} (from {flag} or {variable}) is not a folder")
    return given


def is_work_tree(path: Path) -> bool:
    return (path / ".git").exists() or not (path / "HEAD").is_file()


def export(path: Path, target: Path) -> Path:
    """The files of ``path``: itself when it is a work tree, else its HEAD exported (git
    archive) into ``target``."""
    if is_work_tree(path):
        return path
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", str(path), "archive", "HEAD"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target

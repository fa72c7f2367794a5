"""Print the registry's file entries of a set from a git checkout of its source: every file
below the given paths at one commit, with its size and the sha256 of its bytes
(``checked = "bytes"``), as cruxflow/datasets/registry/*.toml lists them.

    python scripts/registry_from_git.py GITDIR COMMIT qrels/qrels.rag24.test.txt topics/
    python scripts/registry_from_git.py GITDIR COMMIT annotator_1/crux_testb/ --strip annotator_1/

GITDIR is a work tree or a bare git directory; a path ending in ``/`` takes every file below it.
``--exclude SUBSTRING`` leaves files out (``--exclude .DS_Store``). The bytes are read with
``git cat-file``, so a file the checkout lacks (a large file left out of a snapshot) is said,
not guessed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys


def files_at(gitdir: str, commit: str, wanted: list[str], exclude: list[str]):
    listing = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "-z", commit],
                             check=True, capture_output=True).stdout.decode()
    for item in listing.split("\0"):
        if not item:
            continue
        meta, path = item.split("\t", 1)
        mode, kind, oid = meta.split()
        if kind != "blob" or any(x in path for x in exclude):
            continue
        if any(path == w or (w.endswith("/") and path.startswith(w)) for w in wanted):
            yield path, oid


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("gitdir")
    p.add_argument("commit")
    p.add_argument("paths", nargs="+")
    p.add_argument("--exclude", action="append", default=[])
    args = p.parse_args(argv)
    gitdir = args.gitdir
    probe = subprocess.run(["git", "-C", gitdir, "rev-parse", "--git-dir"], capture_output=True,
                           text=True)
    if probe.returncode == 0:   # a work tree: its git directory
        gitdir = subprocess.run(["git", "-C", gitdir, "rev-parse", "--absolute-git-dir"],
                                check=True, capture_output=True, text=True).stdout.strip()
    entries, missing = [], []
    for path, oid in files_at(gitdir, args.commit, args.paths, args.exclude):
        blob = subprocess.run(["git", "--git-dir", gitdir, "cat-file", "blob", oid],
                              capture_output=True)
        if blob.returncode != 0:
            missing.append(path)
            continue
        entries.append((path, len(blob.stdout), hashlib.sha256(blob.stdout).hexdigest()))
    print("files = [")
    for path, size, sha in entries:
        print(f'  {{path = {json.dumps(path)}, size = {size}, sha256 = "{sha}", '
              'checked = "bytes"},')
    print("]")
    for path in missing:
        print(f"# not in the checkout (no entry): {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

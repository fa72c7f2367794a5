"""``cruxflow ingest --format crux``: the CRUX authors' data in every layout they publish.

:func:`read_crux` detects the layout of a directory (or a topics file) and reads it:

* the Hugging Face release as users clone it (``crux-mds-<subset>/``, ``crux-neuclir/``):
  :mod:`cruxflow.data.ingest.crux_release`;
* the paper-era files (``<split>_topics.jsonl``, ``<split>_passages.jsonl``, judgements and
  TREC runs in one folder, as the labeling tool ships them): :mod:`.crux_paper`;
* cruxflow's own crux directory (``topics.jsonl``, ``passages.jsonl``, ``judgements.jsonl``,
  ``runs/``), read by the same code.

The report names the layout found; when none fits, the error lists what was looked for.
"""

from __future__ import annotations

from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.common import IngestOptions
from cruxflow.data.ingest.crux_paper import own_files, paper_files, read_flat
from cruxflow.data.ingest.crux_release import is_release, read_release, release_runs
from cruxflow.data.io import wrong_kind

LOOKED_FOR = (
    "looked for (a) the Hugging Face release clone: topic/*.jsonl with subtopics/, judge/ or "
    "qrels/ beside it (pass one subset folder such as crux-mds-duc04); (b) the paper-era "
    "files: a JSONL file of topic records (example_id or qid, topic, questions, report), e.g. "
    "<split>_topics.jsonl, with passages, judgements and TREC runs beside it; (c) cruxflow's "
    "own crux directory: topics.jsonl and passages.jsonl")


def _subsets(root: Path) -> list[str]:
    return sorted(d.name for d in root.iterdir() if d.is_dir() and is_release(d))


def read_crux(path, options: IngestOptions) -> tuple:
    """Read CRUX data in whichever published layout ``path`` holds; ``(Dataset, report)``."""
    root = Path(path)
    if not root.exists():
        raise DataError("no such CRUX directory or topics file", path=root)
    if not (root.is_dir() or root.is_file()):
        raise wrong_kind(root, "a CRUX directory or topics file")
    if root.is_dir() and (root / "topics.jsonl").is_file():
        return read_flat(own_files(root), options)
    if is_release(root):
        return read_release(root, options)
    found = paper_files(root, options.encoding)
    if found is not None:
        return read_flat(found, options)
    if root.is_dir():
        subsets = _subsets(root)
        if subsets:
            raise DataError("this looks like $CRUX_ROOT, which holds several subsets: pass one "
                            f"of them ({', '.join(subsets)})", path=root)
    raise DataError(f"no CRUX layout found: {LOOKED_FOR}", path=root)


def crux_runs(path, options: IngestOptions | None = None) -> list[Path]:
    """The TREC run files a CRUX directory ships: ``runs/`` (our own layout), ``run/`` (the
    release) or the run files lying beside the paper-era files."""
    root = Path(path)
    encoding = (options or IngestOptions()).encoding
    if root.is_dir() and (root / "topics.jsonl").is_file():
        return own_files(root).runs
    if is_release(root):
        return release_runs(root)
    found = paper_files(root, encoding)
    return found.runs if found is not None else []

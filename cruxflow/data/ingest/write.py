"""Writing one corpus as a dataset directory (:func:`ingest_to`): read in its format, every
record checked as the dataset's loader will check it, the runs the input ships checked against
it, then the whole directory written at once.

:func:`ingest_to` writes the whole dataset into a fresh directory beside ``out`` and then puts
it in place of ``out`` as a whole, so a re-ingest never leaves a file of the previous dataset
(stale ``judgments/``, ``runs/``) beside the new one, and a failure leaves ``out`` as it was. It
replaces only a directory without files (Snakemake makes the outputs' folders before the job) or
an earlier dataset: one whose ``manifest.json`` is a manifest ``ingest`` wrote (recognised by its
content, not its name: web apps and browser extensions have a ``manifest.json`` too) and that
holds nothing but the files a dataset consists of. Anything else, and an output that is, holds
or lies inside an input, is refused before anything is read.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.formats import (
    FORMATS,
    IngestOptions,
    ingest,
    no_ratings_note,
    option_paths,
    resolved,
)
from cruxflow.data.ingest.formats import options as declared_options
from cruxflow.data.io import read_json, read_run, read_text
from cruxflow.data.model import (
    Dataset,
    document_from_json,
    passage_from_json,
    rating_from_json,
    reference_rating_from_json,
    topic_from_json,
)
from cruxflow.data.names import DATASET_FILES, MANIFEST
from cruxflow.data.outputs import atomic_directory, atomic_write

# The distractors file's own names of the fields its reader renames (a format's are its entry's
# ``input_fields``), so that an error names what the user wrote.
DISTRACTOR_FIELDS = {"title": "headline", "source_id": "docno"}

# What ``ingest_to`` writes into the manifest, so that a later ingest can tell a dataset of ours
# from any other folder with a manifest.json.
WRITTEN_BY = "cruxflow ingest"
# The files a dataset directory may hold (relative paths, fnmatch patterns): what ingest writes
# (Dataset.save, write_judgments, the shipped runs) and nothing else.
_DATASET_PATTERNS = (*DATASET_FILES.values(), "judgments/eta[0-9]/*", "runs/*")


def is_our_manifest(path: Path) -> bool:
    """Whether ``path`` is a manifest ``ingest`` wrote: a JSON object that says so (or, from
    before the mark, that has the ``ingest`` report and the ``counts`` of every part)."""
    try:
        manifest = read_json(path)
    except DataError:
        return False
    if not isinstance(manifest, dict):
        return False
    if manifest.get("written_by") == WRITTEN_BY:
        return True
    counts = manifest.get("counts")
    return isinstance(manifest.get("ingest"), dict) and isinstance(counts, dict) and all(
        isinstance(counts.get(part), int) for part in ("topics", "documents", "passages"))


def foreign_files(directory: Path) -> list[str]:
    """The files under ``directory`` that no dataset holds (relative paths, sorted); a symlink
    counts as foreign (replacing it could point the next reader elsewhere)."""
    out = []
    for rel, is_link in _files(directory):
        if is_link or not any(fnmatch.fnmatchcase(rel, pat) for pat in _DATASET_PATTERNS):
            out.append(rel)
    return sorted(out)


def _files(directory: Path) -> list[tuple[str, bool]]:
    """Every entry under ``directory`` but the real folders, as (relative path, is a symlink);
    symlinks are not followed (a loop would never end)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(directory):
        base = Path(dirpath)
        for name in dirnames:
            if (base / name).is_symlink():
                found.append(((base / name).relative_to(directory).as_posix(), True))
        for name in filenames:
            p = base / name
            found.append((p.relative_to(directory).as_posix(), p.is_symlink()))
    return found


def _resolved(path) -> Path:
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError):  # a symlink to itself, or a loop of them
        raise DataError("cannot read: too many levels of symbolic links (a loop)",
                        path=path) from None


def check_output(out, inputs) -> None:
    """Refuse an output that would destroy an input or a directory that is not a dataset."""
    target = _resolved(out)
    for given in inputs:
        src = _resolved(given)
        if target == src or target in src.parents or src in target.parents:
            raise DataError(f"the output is, holds or lies inside the input {given}: writing "
                            "it would destroy the input; choose another --output", path=out)
    blocker = next((p for p in (target, *target.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise DataError("is a file, not a directory: cannot write the dataset there",
                        path=out if blocker == target else blocker)
    if not target.is_dir():
        return
    # Empty directories do not count: Snakemake makes the outputs' folders before the job.
    if not _files(target):
        return
    if not (target / MANIFEST).is_file():
        raise DataError(f"exists, holds files and no dataset (no {MANIFEST}): refusing to "
                        "replace it; choose another --output or empty it", path=out)
    if not is_our_manifest(target / MANIFEST):
        raise DataError(f"holds a {MANIFEST} that cruxflow ingest did not write: not a "
                        "dataset, refusing to replace it; choose another --output", path=out)
    foreign = foreign_files(target)
    if foreign:
        raise DataError(f"is a dataset but also holds {foreign[0]!r}"
                        + (f" and {len(foreign) - 1} more files" if len(foreign) > 1 else "")
                        + " that no dataset has: refusing to replace it; move them away or "
                        "choose another --output", path=out)


def check_records(dataset: Dataset, fmt: str, src, distractors=None) -> None:
    """Every record as :meth:`Dataset.load` will check it, before anything is written: a reader
    that lets a bad value through (a number where text belongs) would otherwise write a dataset
    its own loader rejects. Errors name the input, the record and the input's field."""

    def check(parse, obj, path, record, renames):
        try:
            parse(obj, {})
        except DataError as e:
            raise DataError(e.reason, path=path, record=record,
                            field=renames.get(e.field, e.field)) from None

    renames = FORMATS[fmt].input_fields
    for t in dataset.topics.values():
        check(topic_from_json, t.to_json(), src, f"topic {t.source_id or t.topic_id}", renames)
    for d in dataset.documents.values():
        mine = d.topic_id is None and distractors is not None
        check(document_from_json, d.to_json(), distractors if mine else src,
              f"document {d.source_id or d.doc_id}",
              DISTRACTOR_FIELDS if mine else renames)
    for p in dataset.passages.values():
        check(passage_from_json, p.to_json(), src, f"passage {p.id}", renames)
    for (tid, pid), ratings in dataset.ratings.items():
        check(rating_from_json, {"topic_id": tid, "passage_id": pid, "ratings": ratings,
                                 "expected": dataset.expected.get((tid, pid))},
              src, f"topic {tid} passage {pid}", renames)
    for r in dataset.reference_ratings.values():
        check(reference_rating_from_json, r.to_json(), src, f"topic {r.topic_id}", renames)


def ingest_to(fmt: str, src, out, options: IngestOptions, *, distractors=None,
              eta: int | None = 3, alpha: float = 0.5, max_topics: int | None = None,
              allow_empty: bool | None = None) -> dict:
    """Read and validate one corpus, then write it as the dataset directory ``out`` (replacing
    an earlier dataset there as a whole); return the summary printed by the CLI.

    ``distractors``, ``max_topics`` and ``allow_empty`` are options
    (:class:`IngestOptions`); given here, they override those of ``options``. An input with no
    topic, an empty distractors file or an empty run file is an error unless ``allow_empty``.
    With ``eta``, the judgments of a rated dataset are written beside it.
    """
    overrides = {k: v for k, v in (("distractors", distractors), ("max_topics", max_topics),
                                   ("allow_empty", allow_empty)) if v is not None}
    options = resolved(fmt, dataclasses.replace(options, **overrides))
    fmt_entry = FORMATS[fmt]
    distractors, max_topics = options.distractors, options.max_topics
    allow_empty = options.allow_empty
    takes = declared_options()["distractors"].formats
    if distractors and fmt not in takes:
        raise DataError(f"--distractors does not apply to the {fmt} format (it applies to "
                        f"{', '.join(takes)})", path=distractors)
    if max_topics is not None and max_topics < 1:
        raise DataError(f"must be at least 1, got {max_topics}", field="max_topics")
    check_output(out, [src, *option_paths(options)])
    from cruxflow.metrics.judgments import derive, write_judgments

    dataset, report = ingest(fmt, src, options)
    if not dataset.topics and not allow_empty:
        skipped = len(report.clusters_skipped)
        raise DataError(f"no topics read ({report.clusters_read} clusters, {skipped} skipped "
                        "with too few documents); pass --allow-empty to write an empty dataset",
                        path=src)
    from cruxflow.data.ingest.distractors import read_distractors

    runs = fmt_entry.shipped_runs(src, options)
    extra = []
    if distractors:
        extra = read_distractors(distractors, f"{options.prefix}-distractors", options.encoding)
        if not extra and not allow_empty:
            raise DataError("no articles; pass --allow-empty to go on without distractors",
                            path=distractors)
        for doc in extra:
            dataset.documents[doc.doc_id] = doc
    check_records(dataset, fmt, src, distractors)
    kept_runs = [(run, _checked_run(run, dataset, allow_empty, options, report))
                 for run in runs]
    if max_topics is not None:
        dataset = dataset.head(max_topics)
    summary = {"output": str(out)}
    with atomic_directory(out) as tmp:
        counts = dataset.save(tmp, extra_manifest={"written_by": WRITTEN_BY,
                                                   "ingest": report.to_json(),
                                                   "prefix": options.prefix,
                                                   "max_topics": max_topics})
        summary.update(counts, clusters_skipped=len(report.clusters_skipped),
                       empty_articles_skipped=report.empty_articles_skipped)
        if report.layout is not None:  # the CRUX reader says which published layout it read
            summary.update(layout=report.layout)
        # what a user must know: a DUC folder's hidden files skipped, ..., and no ratings
        notes = report.notes + ([] if dataset.ratings else [no_ratings_note(fmt)])
        if notes:
            summary.update(notes=notes)
        if dataset.ratings and eta is not None:
            summary["judgments"] = write_judgments(derive(dataset, eta, alpha), dataset,
                                                   tmp / "judgments" / f"eta{eta}", eta)
        for run, text in kept_runs:
            # the run as shipped, less the lines of topics that --max-topics dropped
            with atomic_write(tmp / "runs" / run.name) as f:
                f.writelines(line for line in text.splitlines(keepends=True)
                             if not line.strip() or line.split()[0] in dataset.topics)
        if fmt_entry.runs is not None:   # a format that ships runs says how many it copied
            summary["runs"] = len(runs)
    return summary


def _checked_run(path: Path, dataset: Dataset, allow_empty: bool, options: IngestOptions,
                 report) -> str:
    """A shipped run's text, after checking its format and that every topic it names is the
    dataset's (a run of another release would score as all zeros). A passage outside the
    collection is an unjudged one, counted in the report's notes (an error with
    ``options.strict_collection``). A folder that ships no passages (the labeling tool's) has
    its runs' topics checked only."""
    from cruxflow.data.runs import check_run

    ranking = read_run(path)
    if not ranking and not allow_empty:
        raise DataError("empty run file; pass --allow-empty to copy it anyway", path=path)
    outside = check_run(ranking, dataset.topics, dataset.passages or None, path,
                        strict_collection=options.strict_collection)
    if outside:
        n = sum(map(len, ranking.values()))
        report.counts.setdefault("run_lines_outside_collection", {})[path.name] = outside
        report.notes.append(f"{path.name}: {outside} of {n} run lines rank a passage outside "
                            "the collection: unjudged (rated 0 for every question, no text); "
                            "--strict-collection refuses them")
    return read_text(path)

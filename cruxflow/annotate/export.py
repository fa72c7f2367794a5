"""What the collected labels say: the export to docs/human-labels.md's formats (read as they are by
``cruxflow agreement`` and the workflow's agreement rules), the disagreements to adjudicate, and
the annotators' agreement over the items they share.

Task 2 exports every rating given; 'cannot judge' is no label (left out and counted, as the
tool's -1). Task 1 exports a report's labels by an annotator only once every question of it is
answered: coverage divides by the kept questions, and the agreement rules refuse a report with a
kept question unlabelled. Extras ride along (readers skip unknown fields): the span, whether the
label was given in review mode, the judge's rating fell in the uncertain range, and when.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from cruxflow.annotate.assign import RATINGS, REPORTS
from cruxflow.annotate.store import Label, Store
from cruxflow.data.errors import DataError
from cruxflow.data.io import write_json, write_jsonl
from cruxflow.metrics.stats import fleiss_kappa

# File names of an export folder; both tasks may export into one folder.
EXPORT_FILES = {REPORTS: "report_labels.jsonl", RATINGS: "passage_ratings.jsonl"}
CANNOT_JUDGE = "cannot judge"


def export_file(directory, task: str) -> Path:
    return Path(directory) / EXPORT_FILES[task]


def summary_file(directory, task: str) -> Path:
    return Path(directory) / f"annotate_{task}.json"


def _span(label: Label) -> dict | None:
    return None if label.span is None else {
        "start": label.span.start, "end": label.span.end, "text": label.span.text}


def export_rows(store: Store) -> tuple[list[dict], Counter]:
    """The rows of the task's export file and what was left out, counted by reason."""
    rows, left_out = [], Counter()
    labels = store.labels()
    if store.task == RATINGS:
        for label in labels:
            item = store.items[label.item_id]
            if label.cannot_judge:
                left_out["cannot judge"] += 1
            elif label.value is None:
                left_out["span without a rating"] += 1
            else:
                question = next(q for q in item.questions if q.index == label.question)
                rows.append({"topic_id": item.topic_id, "passage_id": item.target,
                             "question": label.question, "annotator": label.annotator,
                             "rating": label.value, "rationale": _span(label),
                             "uncertain": question.uncertain, "review": label.review,
                             "labelled_at": label.updated_at})
        return rows, left_out
    by_report: dict[tuple[int, str], list[Label]] = {}
    for label in labels:
        if label.given:
            by_report.setdefault((label.item_id, label.annotator), []).append(label)
    for (item_id, annotator), group in by_report.items():
        item = store.items[item_id]
        if len(group) < len(item.questions):
            left_out["questions of reports not finished"] += len(group)
            continue
        rows += [{"topic_id": item.topic_id, "system": item.target, "annotator": annotator,
                  "question": label.question, "answerable": label.value == 1,
                  "span": _span(label), "labelled_at": label.updated_at} for label in group]
    return rows, left_out


def export(store: Store, directory) -> dict:
    """Write the task's labels (atomically) and a summary beside them; return the summary."""
    rows, left_out = export_rows(store)
    path = export_file(directory, store.task)
    if not rows:
        raise DataError("nothing to export yet: no " + (
            "rating given" if store.task == RATINGS else "report finished by an annotator"),
            path=store.path)
    write_jsonl(path, rows)
    summary = {"task": store.task, "database": str(store.path), "file": path.name,
               "labels": len(rows), "left_out": dict(left_out),
               "by_annotator": dict(Counter(r["annotator"] for r in rows)),
               "agreement": agreement(store), "settings": store.settings}
    write_json(summary_file(directory, store.task), summary)
    return summary


def _given_by_unit(store: Store) -> dict[tuple[int, int], dict[str, Label]]:
    units: dict[tuple[int, int], dict[str, Label]] = {}
    for label in store.labels():
        if label.given:
            units.setdefault((label.item_id, label.question), {})[label.annotator] = label
    return units


def _shown(label: Label) -> int | str:
    return CANNOT_JUDGE if label.cannot_judge else label.value


def disagreements(store: Store) -> list[dict]:
    """The (item, question) units that two or more annotators labelled differently; with
    ratings, ``classes_differ`` says whether they also fall on both sides of eta (or one could
    not judge)."""
    eta = store.settings.get("eta", 3)
    out = []
    for (item_id, question), labels in sorted(_given_by_unit(store).items()):
        values = {name: _shown(label) for name, label in sorted(labels.items())}
        if len(labels) < 2 or len(set(values.values())) < 2:
            continue
        classes = {v if v == CANNOT_JUDGE else v >= eta for v in values.values()} \
            if store.task == RATINGS else set(values.values())
        item = store.items[item_id]
        text = next(q.text for q in item.questions if q.index == question)
        out.append({"item_id": item_id, "topic_id": item.topic_id, "target": item.target,
                    "question": question, "question_text": text, "labels": values,
                    "classes_differ": len(classes) > 1})
    return out


def agreement(store: Store) -> dict:
    """Fleiss' kappa over the (item, question) units labelled by exactly ``overlap``
    annotators (none of them 'cannot judge'): binary labels (ratings binarized at eta) and,
    for ratings, the six grades as categories. Kappa is ``None`` when undefined."""
    overlap = store.settings.get("overlap", 1)
    eta = store.settings.get("eta", 3)
    units = [[label.value for label in labels.values()]
             for labels in _given_by_unit(store).values()
             if len(labels) == overlap and not any(x.cannot_judge for x in labels.values())]
    out = {"overlap": overlap, "units": len(units), "kappa": None}
    if overlap < 2 or not units:
        return out
    matrix = np.array(units, dtype=int)
    if store.task == RATINGS:
        out["kappa"] = fleiss_kappa((matrix >= eta).astype(int), n_categories=2)
        out["kappa_grades"] = fleiss_kappa(matrix, n_categories=6)
        out["eta"] = eta
    else:
        out["kappa"] = fleiss_kappa(matrix, n_categories=2)
    return out

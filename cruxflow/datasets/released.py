"""``cruxflow.datasets.load(name)``: a fetched set in the shapes :func:`cruxflow.evaluate`
takes, read from the cache (nothing is downloaded here).

    import cruxflow
    from cruxflow.datasets import load
    duc = load("crux-mds-duc04")
    scores = cruxflow.evaluate(duc.runs["bm25"], duc.judgments, ["Cov@10", "alpha_nDCG@10"])

:class:`Released` holds the set's ``topics`` (topic -> request or query), ``questions``
(topic -> its sub-questions or nuggets, in the order the ratings index them; None where the
set has none), ``judgments`` (:class:`~cruxflow.metrics.inputs.Judgments`, or what
:func:`~cruxflow.metrics.inputs.as_judgments` reads), ``runs`` (name -> TREC run file) and
``collection`` (the passage texts' folder, where the set has one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.datasets.cache import set_path
from cruxflow.datasets.registry import DataSet, get


@dataclass
class Released:
    name: str
    kind: str
    path: Path
    topics: dict[str, str]
    questions: dict[str, list[str]] | None
    judgments: object
    runs: dict[str, Path] = field(default_factory=dict)
    collection: Path | None = None


def judgments_of(dataset: DataSet):
    """The judgments a set holds, as :func:`~cruxflow.metrics.inputs.as_judgments` reads
    them (see :mod:`cruxflow.datasets.by_name`)."""
    folder = set_path(dataset)
    if dataset.kind == "coveragebench":
        from cruxflow.datasets import coveragebench

        return coveragebench.judgments(coveragebench.read_config(folder, dataset.layout,
                                                                 dataset.name))
    paths = [folder / p for p in dataset.laid_out("judgments")]
    if not paths:
        raise DataError(f"{dataset.name} holds no judgments ({dataset.title})")
    if dataset.kind == "trec-qrels":
        from cruxflow.metrics.inputs import Judgments

        return Judgments(relevance=paths[0], source=dataset.name)
    if len(paths) > 1:
        return paths    # several ratings files, read as one
    return paths[0]


def _topics_and_questions(dataset: DataSet, folder: Path):
    """The topics (and the sub-questions) of a CRUX subset or the labeling release, read by
    the CRUX reader ``cruxflow ingest --format crux`` uses."""
    from cruxflow.data.ingest.common import IngestOptions
    from cruxflow.data.ingest.crux import read_crux

    where = dataset.laid_out("topics")
    source = folder / where[0] if where else folder
    if dataset.kind == "crux-subset":
        source = folder
    read, _report = read_crux(source, IngestOptions())
    topics = {t.topic_id: t.query or "" for t in read.topics.values()}
    questions = {t.topic_id: list(t.questions) for t in read.topics.values()}
    return topics, (questions if any(questions.values()) else None)


def _trec_topics(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        if path.suffix == ".jsonl":
            obj = json.loads(line)
            tid = obj.get("id", obj.get("qid", obj.get("topic_id")))
            text = obj.get("title", obj.get("text", obj.get("query")))
        else:
            tid, _, text = line.partition("\t")
        if tid is None or text is None:
            raise DataError("a topic needs its id and text", path=path, record=f"line {lineno}")
        out[str(tid)] = str(text).strip()
    return out


def _runs(folder: Path, dataset: DataSet) -> dict[str, Path]:
    """The set's TREC run files by name (the file's name without its suffix)."""
    from cruxflow.data.ingest.crux import crux_runs

    out = {}
    for where in dataset.laid_out("runs"):
        place = folder / where
        if place.is_file():
            found = [place]
        elif place.is_dir():     # the release's run/ folder, or the paper-era files' folder
            found = crux_runs(place) or sorted(p for p in place.iterdir() if p.is_file()
                                               and not p.name.startswith("."))
        else:
            found = []
        out.update({p.stem: p for p in found})
    return out


def load(name: str) -> Released:
    """The fetched set ``name`` (``cruxflow fetch NAME`` first), read from the cache."""
    dataset = get(name)
    folder = set_path(dataset)
    collection = next((folder / p for p in dataset.laid_out("collection")
                       if (folder / p).exists()), None)
    if dataset.kind == "coveragebench":
        from cruxflow.datasets import coveragebench

        config = coveragebench.read_config(folder, dataset.layout, dataset.name)
        return Released(name, dataset.kind, folder, config.topics, config.nugget_texts,
                        coveragebench.judgments(config), dict(config.runs), collection)
    if dataset.kind == "trec-qrels":
        topics = {}
        for p in dataset.laid_out("topics"):
            topics.update(_trec_topics(folder / p))
        return Released(name, dataset.kind, folder, topics, None, judgments_of(dataset), {},
                        None)
    if dataset.kind == "corpus":
        return Released(name, dataset.kind, folder, {}, None, None, {}, folder)
    topics, questions = _topics_and_questions(dataset, folder)
    judgments = judgments_of(dataset) if dataset.laid_out("judgments") else None
    return Released(name, dataset.kind, folder, topics, questions, judgments,
                    _runs(folder, dataset), collection)

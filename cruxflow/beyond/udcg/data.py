"""Reading UDCG input: questions, reference answers and their passages in context order.

One reader takes both formats (see docs/udcg.md):

- the UDCG authors' release: a JSON list (or JSONL) of items ``{"example_id"?, "question",
  "answers"?, "passages": [{"doc_id", "text", "is_relevant", "models_info"?: {<model>:
  {"no_res_prob"}}}]}``;
- ours, JSONL: ``{"id", "question", "answers": [...], "passages": [{"id", "text",
  "relevant"?}]}``.

Item ids: ``id``, else ``example_id``, else ``item<N>`` (N counts items from 1). Passage ids:
``id``, else ``doc_id``, else ``p<N>`` (N counts the item's passages from 1). A relevance label
is ``relevant`` or ``is_relevant`` (true/false, 1/0, or null for unknown). Given abstention
probabilities come from ``models_info[<model>].no_res_prob`` or, as in the authors' first
README, a flat ``no_res_prob_<model>`` key. An item's released score (``"udcg": {<model>:
score}``, what the authors' pipeline writes) is kept to compare a reproduction with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.io import iter_jsonl, read_json, read_text

_FLAT_PREFIX = "no_res_prob_"


@dataclass
class UdcgPassage:
    id: str
    text: str
    relevant: bool | None            # None: no label in the input
    no_res_prob: dict[str, float] = field(default_factory=dict)  # model -> given p(NO-RESPONSE)
    label_field: str = "relevant"    # for messages: the field name this format uses


@dataclass
class UdcgItem:
    id: str
    question: str
    answers: list[str] | None
    passages: list[UdcgPassage]
    record: str                      # where in the file: "item 3" or "line 12"
    released: dict[str, float] = field(default_factory=dict)  # model -> the file's "udcg"


def read_items(path) -> list[UdcgItem]:
    """All items of a JSON list or JSONL file; bad input raises :class:`DataError` naming the
    file, the record (``item N`` for a JSON list, ``line N`` for JSONL) and the field."""
    path = Path(path)
    if read_text(path).lstrip().startswith("["):
        records = [(f"item {i}", obj) for i, obj in enumerate(read_json(path), 1)]
    else:
        records = [(f"line {n}", obj) for n, obj in iter_jsonl(path)]
    items: list[UdcgItem] = []
    seen: set[str] = set()
    for index, (record, obj) in enumerate(records, 1):
        item = _item(obj, index, path, record)
        if item.id in seen:
            raise DataError(f"item id {item.id!r} appears twice", path=path, record=record,
                            field="id")
        seen.add(item.id)
        items.append(item)
    if not items:
        raise DataError("no items", path=path)
    return items


def _item(obj, index: int, path, record: str) -> UdcgItem:
    def bad(message: str, fld: str | None = None):
        return DataError(message, path=path, record=record, field=fld)

    if not isinstance(obj, dict):
        raise bad(f"expected a JSON object, got {type(obj).__name__}")
    item_id = obj.get("id", obj.get("example_id"))
    item_id = f"item{index}" if item_id is None or item_id == "" else str(item_id)
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise bad("missing or empty question (a non-empty string)", "question")
    answers = obj.get("answers")
    if answers is not None:
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not all(isinstance(a, str | int | float)
                                                    and not isinstance(a, bool)
                                                    for a in answers):
            raise bad("answers must be a list of strings", "answers")
        answers = [str(a) for a in answers]
    passages = obj.get("passages")
    if not isinstance(passages, list) or not passages:
        raise bad("passages must be a non-empty list", "passages")
    out: list[UdcgPassage] = []
    ids: set[str] = set()
    for j, p in enumerate(passages):
        where = f"passages[{j}]"
        if not isinstance(p, dict):
            raise bad(f"expected a JSON object, got {type(p).__name__}", where)
        pid_key = "id" if "id" in p else "doc_id"
        pid = p.get(pid_key)
        pid = f"p{j + 1}" if pid is None or pid == "" else str(pid)
        if pid in ids:
            raise bad(f"passage id {pid!r} appears twice in this item", f"{where}.{pid_key}")
        ids.add(pid)
        text = p.get("text")
        if not isinstance(text, str) or not text.strip():
            raise bad("missing or empty passage text", f"{where}.text")
        label_key = next((k for k in ("relevant", "is_relevant") if k in p),
                         "relevant" if "id" in p else "is_relevant")  # ours or the authors
        out.append(UdcgPassage(pid, text, _label(p.get(label_key), bad, f"{where}.{label_key}"),
                               _given(p, bad, where), label_key))
    return UdcgItem(item_id, question, answers, out, record, _released(obj, bad))


def _label(value, bad, fld: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise bad(f"relevance label must be true, false, 1, 0 or null, got {value!r}", fld)


def _probability(value, bad, fld: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) \
            or not 0.0 <= value <= 1.0:
        raise bad(f"no_res_prob must be a probability in [0, 1], got {value!r}", fld)
    return float(value)


def _given(p: dict, bad, where: str) -> dict[str, float]:
    given: dict[str, float] = {}
    info = p.get("models_info")
    if info is not None:
        if not isinstance(info, dict):
            raise bad("models_info must be an object {model: {no_res_prob: ...}}",
                      f"{where}.models_info")
        for model, entry in info.items():
            fld = f"{where}.models_info.{model}"
            if not isinstance(entry, dict):
                raise bad("expected an object with no_res_prob", fld)
            if entry.get("no_res_prob") is not None:
                given[model] = _probability(entry["no_res_prob"], bad, f"{fld}.no_res_prob")
    for key, value in p.items():
        if key.startswith(_FLAT_PREFIX) and value is not None:
            given.setdefault(key[len(_FLAT_PREFIX):],
                             _probability(value, bad, f"{where}.{key}"))
    return given


def _released(obj: dict, bad) -> dict[str, float]:
    """The UDCG per model the authors' pipeline wrote into an item (``"udcg": {model:
    score}``, their ``compute_udcg_scores.py``), kept to check a reproduction against."""
    given = obj.get("udcg")
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise bad("udcg must be an object {model: score}", "udcg")
    out = {}
    for model, value in given.items():
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value):
            raise bad(f"expected a number, got {value!r}", f"udcg.{model}")
        out[model] = float(value)
    return out


def given_models(items: list[UdcgItem]) -> list[str]:
    """Every model that has a given ``no_res_prob`` somewhere in ``items``, sorted."""
    return sorted({m for it in items for p in it.passages for m in p.no_res_prob})

"""KPR's LLM steps: key point extraction (rounds, deduplication, the paper's aggregation and
AutoDS filter), the key points of a response, and entailment judging for KPR and KPP."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from functools import partial

from cruxflow.beyond.kpr.data import Judgment, KeyPoint, KPRItem, SourceDocument
from cruxflow.beyond.kpr.parsing import (
    DEMO_KEYS,
    filter_score,
    key_points_or_none,
    parse_aggregation,
    parse_entailment,
    parse_key_points,
    point_key,
    span_in_text,
)
from cruxflow.beyond.kpr.prompts import (
    AGGREGATE_SAMPLING,
    AGGREGATION,
    AGGREGATION_DEMONSTRATION,
    ENTAILMENT,
    EXTRACT_SAMPLING,
    EXTRACTION,
    EXTRACTION_DEMONSTRATION,
    EXTRACTION_MORE,
    FILTER,
    FILTER_SAMPLING,
    JUDGE_SAMPLING,
)
from cruxflow.data.text import split_long_document
from cruxflow.llm import LLMRunner, Request, Sampling
from cruxflow.llm.retry import ask_with_retries


def _format_points(points: Sequence[str]) -> str:
    return "\n".join(f"Point {i}: {p}" for i, p in enumerate(points, 1))


def _merge(points: Iterable[KeyPoint]) -> list[KeyPoint]:
    """Normalised deduplication: points with the same key (:func:`point_key`) become one,
    the first text kept, spans and sources merged in order."""
    merged: dict[str, KeyPoint] = {}
    for p in points:
        key = point_key(p.text)
        if key not in merged:
            merged[key] = dataclasses.replace(p, spans=list(p.spans),
                                              spans_found=list(p.spans_found),
                                              sources=list(p.sources))
            continue
        m = merged[key]
        for s, f in zip(p.spans, p.spans_found, strict=True):
            if s not in m.spans:
                m.spans.append(s)
                m.spans_found.append(f)
        m.sources.extend(x for x in p.sources if x not in m.sources)
        if p.round is not None and (m.round is None or p.round < m.round):
            m.round = p.round
    return list(merged.values())


def extract_key_points(items: Sequence[KPRItem], runner: LLMRunner, *, rounds: int = 1,
                       sampling: Sampling = EXTRACT_SAMPLING, attempts: int = 3,
                       drop_unfound: bool = False, max_words: int | None = None,
                       aggregate: bool = False, filter_threshold: float | None = None,
                       aggregate_sampling: Sampling = AGGREGATE_SAMPLING,
                       filter_sampling: Sampling = FILTER_SAMPLING,
                       demonstration: str = EXTRACTION_DEMONSTRATION,
                       filter_runner: LLMRunner | Callable[[], LLMRunner] | None = None,
                       ) -> list[KPRItem]:
    """Items with their key points extracted from their documents (items that already have
    key points are returned unchanged).

    Per document (cut into ``max_words``-word pieces first when given, for small context
    windows), round 1 asks :data:`EXTRACTION`; rounds 2..``rounds`` ask
    :data:`EXTRACTION_MORE` with the piece's points so far, and a piece stops early when a
    round adds nothing new. A point repeating one of our demonstration's points or spans is
    dropped (a small model copies them; ``n_demo_copies``) and is not new. Each span is
    checked against the whole document (:func:`span_in_text`). Then, per question:
    normalised duplicates are merged (:func:`_merge`);
    with ``drop_unfound`` points none of whose spans was found are dropped (the paper keeps
    them and has humans check grounding, so the default keeps them); with ``aggregate`` the
    paper's LLM de-duplication runs (:data:`AGGREGATION`; an output failing its check is
    retried and then ignored, counted); with ``filter_threshold`` the AutoDS filter keeps
    points whose Eq. 3 score reaches it (the paper: 0.7; a point without a score is kept and
    counted; ``filter_runner``, a runner or a function building one, scores with another
    model than the extractor's, as the paper allows: AutoDS scores with a model's logits).
    Point ids are ``<item id>-kp<n>``.

    A piece whose first-round output has no parseable point is retried with the next seed
    (when sampling is not greedy) and counted as a parse failure; an empty later round just
    ends that piece's extraction. ``item.extraction`` records the counts.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    todo = [it for it in items if it.key_points is None]
    # pieces: (item index in todo, document, text)
    pieces: list[tuple[int, SourceDocument, str]] = []
    for i, it in enumerate(todo):
        for doc in it.documents:
            texts = ([doc.text] if max_words is None
                     else split_long_document(doc.text, max_words, max_words))
            pieces.extend((i, doc, t) for t in texts if t.strip())
    found: list[list[KeyPoint]] = [[] for _ in pieces]
    raw_counts = [0] * len(pieces)
    demo_counts = [0] * len(pieces)
    active = list(range(len(pieces)))
    for rnd in range(1, rounds + 1):
        if not active:
            break
        if rnd == 1:
            prompts = [EXTRACTION.render(demonstration=demonstration,
                                         query=todo[pieces[k][0]].question,
                                         text=pieces[k][2]) for k in active]
        else:
            prompts = [EXTRACTION_MORE.render(demonstration=demonstration,
                                              query=todo[pieces[k][0]].question,
                                              text=pieces[k][2],
                                              points=_format_points([p.text for p in found[k]]))
                       for k in active]
        # an empty later round is an answer ("nothing more"), not a failure: its parser's []
        # is a value, so only round 1 retries and counts failures
        parse = key_points_or_none if rnd == 1 else parse_key_points
        results = [(a.value, a.text) for a in ask_with_retries(
            runner, prompts, sampling, parse, attempts=attempts if rnd == 1 else 1)]
        still = []
        for k, (parsed, _) in zip(active, results, strict=True):
            _, doc, _ = pieces[k]
            keys = {point_key(p.text) for p in found[k]}
            new = 0
            for text, spans in parsed or []:
                raw_counts[k] += 1
                if point_key(text) in DEMO_KEYS:
                    demo_counts[k] += 1
                    continue
                if point_key(text) in keys:
                    continue
                keys.add(point_key(text))
                found[k].append(KeyPoint(
                    id="", text=text, spans=spans,
                    spans_found=[span_in_text(s, doc.text) for s in spans],
                    sources=[doc.id], round=rnd))
                new += 1
            if new:
                still.append(k)
        active = still

    out_items = list(items)
    index = {id(it): n for n, it in enumerate(items)}
    per_item: list[list[KeyPoint]] = [[] for _ in todo]
    n_raw = [0] * len(todo)
    n_demo = [0] * len(todo)
    for k, (i, _, _) in enumerate(pieces):
        per_item[i].extend(found[k])
        n_raw[i] += raw_counts[k]
        n_demo[i] += demo_counts[k]
    for i, it in enumerate(todo):
        points = _merge(per_item[i])
        unfound = [p for p in points if not p.span_found]
        if drop_unfound:
            points = [p for p in points if p.span_found]
        it2 = dataclasses.replace(it, key_points=points, extraction={
            "n_pieces": sum(1 for x in pieces if x[0] == i), "n_parsed": n_raw[i],
            "n_demo_copies": n_demo[i], "n_after_dedup": len(points) + (
                len(unfound) if drop_unfound else 0),
            "n_span_not_found": len(unfound), "dropped_span_not_found": drop_unfound})
        out_items[index[id(it)]] = it2
        todo[i] = it2
    if aggregate:
        _aggregate(todo, runner, aggregate_sampling, attempts)
    if filter_threshold is not None and any(it.key_points for it in todo):
        if filter_runner is None:
            filter_runner = runner
        elif not isinstance(filter_runner, LLMRunner):
            filter_runner = filter_runner()
        _filter(todo, filter_runner, filter_threshold, filter_sampling)
    for it in todo:
        for n, p in enumerate(it.key_points or [], 1):
            p.id = f"{it.id}-kp{n}"
        it.extraction["n_key_points"] = len(it.key_points or [])
    return out_items


def _aggregate(items: list[KPRItem], runner: LLMRunner, sampling: Sampling,
               attempts: int) -> None:
    """The paper's LLM de-duplication and aggregation, in place (see :func:`parse_aggregation`)."""
    todo = [it for it in items if len(it.key_points or []) >= 2]
    prompts = [AGGREGATION.render(demonstration=AGGREGATION_DEMONSTRATION,
                                  points=_format_points([p.text for p in it.key_points]))
               for it in todo]
    parsers = [partial(parse_aggregation, n=len(it.key_points)) for it in todo]
    results = [a.value for a in ask_with_retries(runner, prompts, sampling, parsers,
                                                 attempts=attempts)]
    for it in items:
        it.extraction.setdefault("aggregation", "not needed")
    for it, parsed in zip(todo, results, strict=True):
        if parsed is None:
            it.extraction["aggregation"] = "failed (kept the de-duplicated points)"
            continue
        old = it.key_points
        new = []
        for content, numbers in parsed:
            members = [old[n - 1] for n in numbers]
            spans, found, sources = [], [], []
            for m in members:
                for s, f in zip(m.spans, m.spans_found, strict=True):
                    if s not in spans:
                        spans.append(s)
                        found.append(f)
                sources.extend(x for x in m.sources if x not in sources)
            rounds = [m.round for m in members if m.round is not None]
            new.append(KeyPoint("", content, spans, found, sources,
                                min(rounds) if rounds else None,
                                merged_from=[m.text for m in members]))
        it.key_points = _merge(new)
        it.extraction["aggregation"] = "ok"


def _filter(items: list[KPRItem], runner: LLMRunner, threshold: float,
            sampling: Sampling) -> None:
    """The AutoDS key-point filter (App. A.2), in place: keep points scoring >= threshold."""
    slots = [(it, p) for it in items for p in it.key_points or []]
    # not ask_with_retries: the score is read from the first token's logprobs, which its text
    # parsers do not see, and the request is greedy, so a retry would get the same token
    outs = runner.generate([Request(FILTER.render(question=it.question, point=p.text),
                                    sampling) for it, p in slots])
    for (_, p), out in zip(slots, outs, strict=True):
        p.score = filter_score(out.top_logprobs, out.text)
        if p.score is None:
            runner.stats.parse_failures += 1
    for it in items:
        before = it.key_points or []
        it.key_points = [p for p in before if p.score is None or p.score >= threshold]
        it.extraction["filter_threshold"] = threshold
        it.extraction["n_filtered_out"] = len(before) - len(it.key_points)
        it.extraction["n_without_score"] = sum(p.score is None for p in before)


def _judge(pairs: list[tuple[str, str, str, str, str]], runner: LLMRunner, kind: str,
           sampling: Sampling, attempts: int) -> list[Judgment]:
    """``pairs``: (item id, point id, point, document text, note-if-skipped-or-empty)."""
    asked = [k for k, (*_, note) in enumerate(pairs) if not note]
    prompts = [ENTAILMENT.render(document=pairs[k][3], claim=pairs[k][2]) for k in asked]
    results = [(a.value, a.text) for a in ask_with_retries(
        runner, prompts, sampling, parse_entailment, attempts=attempts)]
    answers = dict(zip(asked, results, strict=True))
    out = []
    for k, (item_id, point_id, point, _, note) in enumerate(pairs):
        if k in answers:
            label, raw = answers[k]
            out.append(Judgment(item_id, kind, point_id, point, label == "yes", label, raw,
                                None if label else "unparseable (counted as not entailed)"))
        else:
            out.append(Judgment(item_id, kind, point_id, point, False, None, None, note))
    return out


def judge_key_points(items: Sequence[KPRItem], runner: LLMRunner, *,
                     sampling: Sampling = JUDGE_SAMPLING, attempts: int = 3) -> list[Judgment]:
    """Eq. 1 for every (key point, response) pair: :data:`ENTAILMENT` with the response as the
    document and the key point as the claim, greedy, one request per pair.

    ``[yes]`` is entailed; ``[no]``, ``[neutral]`` and an unparseable output (after
    ``attempts`` tries, which only differ when sampling is not greedy; counted in
    ``runner.stats.parse_failures``) are not. An empty response entails nothing and is not
    sent. Items need key points (run :func:`extract_key_points` first).
    """
    pairs = []
    for it in items:
        if it.key_points is None:
            raise ValueError(f"item {it.id}: no key points (extract them first)")
        if it.response is None:
            raise ValueError(f"item {it.id}: no response to judge")
        empty = "" if it.response.strip() else "empty response"
        pairs.extend((it.id, p.id, p.text, it.response, empty) for p in it.key_points)
    return _judge(pairs, runner, "recall", sampling, attempts)


def extract_response_points(items: Sequence[KPRItem], runner: LLMRunner, *,
                            sampling: Sampling = EXTRACT_SAMPLING, attempts: int = 3,
                            demonstration: str = EXTRACTION_DEMONSTRATION,
                            ) -> dict[str, list[KeyPoint]]:
    """The key points of each response, for KPP: :data:`EXTRACTION` with the response as the
    text (one round), spans checked against the response, normalised duplicates and copies of
    the demonstration dropped. Ids ``<item id>-rp<n>``. Items without key points (excluded
    from every mean) and empty responses get none, without a call."""
    todo = [it for it in items if it.key_points and it.response and it.response.strip()]
    prompts = [EXTRACTION.render(demonstration=demonstration, query=it.question,
                                 text=it.response) for it in todo]
    results = [(a.value, a.text) for a in ask_with_retries(
        runner, prompts, sampling, key_points_or_none, attempts=attempts)]
    out: dict[str, list[KeyPoint]] = {it.id: [] for it in items}
    for it, (parsed, _) in zip(todo, results, strict=True):
        points = _merge(KeyPoint("", t, s, [span_in_text(x, it.response) for x in s],
                                 ["response"], 1)
                        for t, s in parsed or [] if point_key(t) not in DEMO_KEYS)
        for n, p in enumerate(points, 1):
            p.id = f"{it.id}-rp{n}"
        out[it.id] = points
    return out


def _reference(it: KPRItem, reference: str) -> str:
    if reference == "key_points":
        return "\n".join(f"{n}. {p.text}" for n, p in enumerate(it.key_points or [], 1))
    if reference == "documents":
        if not it.documents:
            raise ValueError(f"item {it.id}: precision against the documents needs documents")
        return "\n\n".join(d.text for d in it.documents)
    raise ValueError(f"reference must be 'key_points' or 'documents', not {reference!r}")


def judge_response_points(items: Sequence[KPRItem], response_points: dict[str, list[KeyPoint]],
                          runner: LLMRunner, *, reference: str = "key_points",
                          sampling: Sampling = JUDGE_SAMPLING,
                          attempts: int = 3) -> list[Judgment]:
    """Whether each key point of a response is present in the retrieved information (KPP,
    Sec. 6.4): :data:`ENTAILMENT` with the reference as the document and the response point
    as the claim. ``reference``: ``"key_points"`` (the question's key points, numbered, one a
    line; default) or ``"documents"`` (its retrieved documents, concatenated)."""
    pairs = []
    for it in items:
        points = response_points.get(it.id, [])
        if not points:
            continue
        ref = _reference(it, reference)
        pairs.extend((it.id, p.id, p.text, ref, "") for p in points)
    return _judge(pairs, runner, "precision", sampling, attempts)



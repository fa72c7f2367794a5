"""LLM judging of support: :func:`judge_support` asks the judge about (sentence, passage) pairs,
:func:`judge_items` fills the labels of the items that need one."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from cruxflow.beyond.support.data import NAMES, NOT_JUDGED, Answer, Item
from cruxflow.beyond.support.options import DEFAULTS, JUDGE_MODES
from cruxflow.beyond.support.passages import PassageStore
from cruxflow.beyond.support.prompts import JUDGE_PROMPTS, JUDGE_SAMPLING, RETRY_TEMPERATURE
from cruxflow.data.errors import DataError
from cruxflow.data.text import clip_words
from cruxflow.llm import LLMRunner, Sampling
from cruxflow.llm.retry import ask_with_retries


def judge_sampling(temperature: float = DEFAULTS.temperature) -> Sampling:
    """:data:`JUDGE_SAMPLING` at ``temperature`` (the track's 0.1 by default)."""
    return dataclasses.replace(JUDGE_SAMPLING, temperature=temperature)


def judge_support(pairs: Sequence[tuple[str, str | None, str]], runner: LLMRunner, *,
                  prompt: str = DEFAULTS.prompt, sampling: Sampling | None = None,
                  attempts: int = DEFAULTS.attempts,
                  max_passage_words: int | None = DEFAULTS.max_passage_words,
                  ) -> list[tuple[int, str]]:
    """``(label, output)`` for each ``(sentence, passage title or None, passage text)``,
    judged with the prompt named ``prompt`` (:data:`JUDGE_PROMPTS`; default the track's) and
    ``sampling`` (default :func:`judge_sampling`, the track's temperature).

    An output the prompt's parser cannot read is asked again, up to ``attempts`` asks in all,
    with the next seed (:func:`cruxflow.llm.retry.ask_with_retries`); under greedy decoding the
    retries sample at :data:`RETRY_TEMPERATURE`, since the same greedy request would repeat
    the output. One still unreadable is a parse failure (counted in
    ``runner.stats.parse_failures``) and gets label -1, not judged, so that it is left out of
    the metrics. Passage texts are clipped to ``max_passage_words`` words.
    """
    if prompt not in JUDGE_PROMPTS:
        raise ValueError(f"prompt must be one of {', '.join(JUDGE_PROMPTS)}, not {prompt!r}")
    judge = JUDGE_PROMPTS[prompt]
    prompts = [judge.render(s, title, clip_words(text, max_passage_words))
               for s, title, text in pairs]

    def parse(text: str) -> str | None:  # a name, never falsy: NS (0) is a valid label
        label = judge.parse(text)
        return None if label is None else NAMES[label]

    answers = ask_with_retries(runner, prompts, sampling or judge_sampling(), parse,
                               attempts=attempts, retry_temperature=RETRY_TEMPERATURE)
    by_name = {v: k for k, v in NAMES.items()}
    return [(NOT_JUDGED if a.value is None else by_name[a.value], a.text) for a in answers]


def judge_items(items: Sequence[Item], answers: Sequence[Answer], store: PassageStore | None,
                runner: LLMRunner | Callable[[], LLMRunner], *, judge: str = "missing",
                prompt: str = DEFAULTS.prompt, sampling: Sampling | None = None,
                attempts: int = DEFAULTS.attempts,
                max_passage_words: int | None = DEFAULTS.max_passage_words,
                ) -> tuple[list[Item], LLMRunner | None]:
    """Items with LLM labels: ``judge="missing"`` judges the cited pairs without a label
    (absent or -1), ``"all"`` every cited pair (a given label is kept as ``given_label``).
    Every passage is looked up before the first call: an unknown id raises
    :class:`DataError` naming the answer record and the citation. ``runner`` may be a
    zero-argument factory, called only when something is to be judged; returns the items and
    the runner used (``None`` when nothing was judged)."""
    if judge not in JUDGE_MODES:
        raise ValueError(f"judge must be 'missing' or 'all', not {judge!r}")
    todo = [k for k, it in enumerate(items)
            if it.cited and (judge == "all" or it.label == NOT_JUDGED)]
    if not todo:
        return list(items), None
    by_key = {a.key: a for a in answers}
    if store is None:
        first = items[todo[0]]
        a = by_key[(first.topic_id, first.run_id)]
        raise DataError("judging needs the passage texts: pass a passage store (--passages)",
                        path=a.path, record=a.record,
                        field=f"{a.sentences[first.sentence_index].field}.citations")
    pairs = []
    for k in todo:
        it = items[k]
        parts = store.parts(it.passage_id)
        if parts is None:
            a = by_key[(it.topic_id, it.run_id)]
            raise DataError(f"passage {it.passage_id!r} is not in {store.path}",
                            path=a.path, record=a.record,
                            field=f"{a.sentences[it.sentence_index].field}"
                                  f".citations[{it.citation_index}]")
        pairs.append((it.sentence, *parts))
    if not isinstance(runner, LLMRunner):
        runner = runner()
    judged = judge_support(pairs, runner, prompt=prompt, sampling=sampling, attempts=attempts,
                           max_passage_words=max_passage_words)
    out = list(items)
    for k, (label, text) in zip(todo, judged, strict=True):
        it = items[k]
        extra = dict(it.extra)
        if it.source == "given":
            extra["given_label"] = it.label
        extra["judge_output"] = text
        if label == NOT_JUDGED:
            extra["parse_failure"] = True
        out[k] = dataclasses.replace(it, label=label, source="judged", extra=extra)
    return out, runner

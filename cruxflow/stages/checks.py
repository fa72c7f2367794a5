"""Checks of generated content that a reader would notice at a glance (issue 54): a report request
or a sub-question that shares no content word with its topic's documents, a topic left with
fewer sub-questions than asked, a passage that names what its source document does not. The
generation stages count them per topic (``logs/<stage>/...checks.json``) and the workflow's
summary (:mod:`cruxflow.paper.summary`) says, in one line, when a stage's share of flagged
items passes :data:`UNFIT_SHARE`: the content is then not fit for conclusions.

The rules are deliberately plain, so that a flag can be checked by eye:

* **content words**: the lowercase alphabetic tokens of two letters or more, minus
  :data:`STOPWORDS` (English function words and the words every request is made of: "write",
  "report", ...);
* **off topic**: a request or sub-question none of whose content words occurs in its topic's
  documents (texts and titles);
* **too few questions**: a topic whose sub-questions, as kept, are fewer than asked;
* **unsupported facts**: a passage with a named entity (a capitalised word that does not start
  a sentence and is no stopword) or a number that its source document lacks, compared without
  case; a number also counts as present where the document spells it (0-99: "twenty five").

They flag what is plainly wrong, not all that is: a request about the right words can still be
a bad request. A large model's output passes them nearly always; the shipped hand-written demo
data passes every one (tests/test_content_checks.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cruxflow.data.model import Document, Passage, Topic

# A stage is unfit for conclusions when, for any of its checks, more than this share of its
# items is flagged. Declared here once; docs/own-data.md ("Is the content usable?") explains it.
UNFIT_SHARE = 0.25
# What to use instead: the paper generated its test sets with Llama-3.1-70B-Instruct and its
# training data with Llama-3.1-8B-Instruct (presets/paper.yaml).
MODEL_ADVICE = ("generate it with an instruction-tuned LLM of 8B parameters or more (the paper "
                "used Llama-3.1-70B-Instruct; presets/paper.yaml)")

# English function words (articles, pronouns, prepositions, conjunctions, auxiliaries, question
# words, frequent adverbs and quantifiers), and the words of the request genre itself.
STOPWORDS = frozenset("""
a about above across after afterwards again against all almost alone along already also although
always am among amongst an and another any anyone anything anyway anywhere are around as at be
became because become becomes been before beforehand behind being below beside besides between
beyond both but by can cannot could did do does doing done down during each either else elsewhere
enough etc even ever every everyone everything everywhere except few for former formerly from
further had has have having he hence her here hereafter hereby herein hers herself him himself his
how however if in indeed into is it its itself just last latter least less many may me meanwhile
might mine more moreover most mostly much must my myself namely neither never nevertheless next no
nobody none noone nor not nothing now nowhere of off often on once one only onto or other others
otherwise our ours ourselves out over own per perhaps please rather same several she should since
so some somehow someone something sometime sometimes somewhere still such than that the their
theirs them themselves then thence there thereafter thereby therefore therein thereupon these they
this those though through throughout thus to together too toward towards under until up upon us
very via was we well were what whatever when whence whenever where whereafter whereas whereby
wherein whereupon wherever whether which while whither who whoever whole whom whose why will with
within without would yet you your yours yourself yourselves
include including includes discuss describe explain provide write report summary summarize
question questions answer information detail details key main overview aspects topic
""".split())

WORD = re.compile(r"[A-Za-z]+")
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# what may stand between a sentence's end and its first word
_OPENERS = "\"'\u201c\u2018([{*-\u2013\u2014"
_SENTENCE_END = ".!?:;"

_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
          "fourteen fifteen sixteen seventeen eighteen nineteen").split()
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}


def content_words(text: str) -> set[str]:
    """The lowercase alphabetic tokens of ``text`` of two letters or more, minus
    :data:`STOPWORDS`."""
    return {w for w in WORD.findall(text.lower()) if len(w) > 1 and w not in STOPWORDS}


def _number(text: str) -> str:
    """A number as compared: thousands separators dropped (``4,200`` is ``4200``)."""
    return re.sub(r",(?=\d{3}\b)", "", text)


def spelled_numbers(text: str) -> set[str]:
    """The numbers 0-99 that ``text`` spells in words ("seven", "twenty five", "forty-two"), as
    digits."""
    words = WORD.findall(text.lower())
    found = set()
    for i, w in enumerate(words):
        if w in _UNITS:
            found.add(str(_UNITS.index(w)))
        elif w in _TENS:
            unit = words[i + 1] if i + 1 < len(words) else ""
            found.add(str(_TENS[w]))
            if unit in _UNITS[1:10]:
                found.add(str(_TENS[w] + _UNITS.index(unit)))
    return found


def _sentence_initial(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens ``text``, a line or a sentence (what comes before it,
    opening quotes and brackets aside, is nothing, a line break or one of ``.!?:;``)."""
    before = text[:start]
    gap = len(before) - len(before.rstrip())
    if "\n" in before[len(before) - gap:]:
        return True
    before = before.rstrip().rstrip(_OPENERS).rstrip()
    return not before or before[-1] in _SENTENCE_END


def entities_and_numbers(text: str) -> list[str]:
    """The named entities (capitalised words that do not start a sentence and are no stopword;
    one-letter words left out) and the numbers of ``text``, in order, each once."""
    found: dict[str, None] = {}
    for m in WORD.finditer(text):
        word = m.group()
        if (len(word) > 1 and word[0].isupper() and word.lower() not in STOPWORDS
                and not _sentence_initial(text, m.start())):
            found.setdefault(word, None)
    for m in NUMBER.finditer(text):
        found.setdefault(_number(m.group()), None)
    return list(found)


@dataclass(frozen=True)
class Source:
    """What a passage may name: its source document's words (lowercase) and numbers."""

    words: frozenset[str]
    numbers: frozenset[str]

    @classmethod
    def of(cls, text: str) -> Source:
        numbers = {_number(n) for n in NUMBER.findall(text)} | spelled_numbers(text)
        return cls(frozenset(w.lower() for w in WORD.findall(text)), frozenset(numbers))

    def lacks(self, passage: str) -> list[str]:
        """The entities and numbers of ``passage`` this source does not hold."""
        return [e for e in entities_and_numbers(passage)
                if (e not in self.numbers if e[0].isdigit() else e.lower() not in self.words)]


# --- counts per check and topic ---------------------------------------------------------------

@dataclass(frozen=True)
class Check:
    """One rule: its name in the reports, the items it looks at and what a flagged one is."""

    name: str
    stage: str      # the rule whose output it checks
    items: str      # what is counted, plural
    flagged: str    # what a flagged item is, after "N of M <items>"


OFF_TOPIC_REQUEST = Check("off_topic", "report_requests", "report requests",
                          "share no content word with their topic's documents")
OFF_TOPIC_QUESTION = Check("off_topic", "subquestions", "sub-questions",
                           "share no content word with their topic's documents")
TOO_FEW_QUESTIONS = Check("too_few_questions", "subquestions", "topics",
                          "have fewer sub-questions than asked")
UNSUPPORTED_FACTS = Check("unsupported_facts", "passages", "passages",
                          "name entities or numbers their source document lacks")
CHECKS = (OFF_TOPIC_REQUEST, OFF_TOPIC_QUESTION, TOO_FEW_QUESTIONS, UNSUPPORTED_FACTS)
# the topic under which a passage of no topic (a distractor) is counted
NO_TOPIC = "(distractors)"


@dataclass
class CheckCounts:
    """One check's counts in one stage: per topic, ``[flagged, checked]``; and the first
    flagged item, with what makes it so, for a reader to look at."""

    check: Check
    topics: dict[str, list[int]] = field(default_factory=dict)
    example: str | None = None

    def add(self, topic: str, flagged: bool, why: str | None = None) -> None:
        counts = self.topics.setdefault(topic, [0, 0])
        counts[0] += int(flagged)
        counts[1] += 1
        if flagged and self.example is None and why:
            self.example = why

    def merge(self, other: CheckCounts) -> None:
        """Add another job's counts of the same check (a stage's shards)."""
        for topic, (flagged, checked) in other.topics.items():
            counts = self.topics.setdefault(topic, [0, 0])
            counts[0] += flagged
            counts[1] += checked
        self.example = self.example or other.example

    @property
    def flagged(self) -> int:
        return sum(f for f, _ in self.topics.values())

    @property
    def checked(self) -> int:
        return sum(c for _, c in self.topics.values())

    @property
    def share(self) -> float:
        return self.flagged / self.checked if self.checked else 0.0

    def unfit(self, threshold: float = UNFIT_SHARE) -> bool:
        """Whether the share of flagged items passes ``threshold``."""
        return self.share > threshold

    def describe(self) -> str:
        """``N of M <items> <flagged>`` with the topics that have any, e.g. "2 of 3
        sub-questions share no content word ... (congress 2/2)"."""
        text = f"{self.flagged} of {self.checked} {self.check.items} {self.check.flagged}"
        hit = [f"{t} {f}/{c}" for t, (f, c) in self.topics.items() if f]
        return text + (f" ({', '.join(hit)})" if hit else "")

    def to_json(self) -> dict:
        return {"check": self.check.name, "items": self.check.items,
                "topics": {t: list(v) for t, v in self.topics.items()}, "example": self.example}

    @classmethod
    def from_json(cls, stage: str, obj: Mapping) -> CheckCounts:
        check = next(c for c in CHECKS if c.stage == stage and c.name == obj["check"])
        return cls(check, {t: [int(f), int(c)] for t, (f, c) in obj["topics"].items()},
                   obj.get("example"))


def _clip(text: str, words: int = 20) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def _topic_words(doc_ids: Iterable[str], documents: Mapping[str, Document]) -> set[str]:
    words: set[str] = set()
    for did in doc_ids:
        doc = documents[did]
        words |= content_words(f"{doc.title or ''} {doc.text}")
    return words


def off_topic(check: Check, texts: Mapping[str, Sequence[str]], topics: Mapping[str, Topic],
              documents: Mapping[str, Document]) -> CheckCounts:
    """``check`` (a request's or a sub-question's) over ``texts`` (topic id -> its generated
    texts): each text that shares no content word with its topic's documents is flagged. A
    topic without documents is not counted (nothing to compare with)."""
    counts = CheckCounts(check)
    for topic, items in texts.items():
        if not topics[topic].doc_ids:
            continue
        words = _topic_words(topics[topic].doc_ids, documents)
        for text in items:
            counts.add(topic, not content_words(text) & words, f"{topic}: {_clip(text)!r}")
    return counts


def request_checks(requests: Mapping[str, str], topics: Mapping[str, Topic],
                   documents: Mapping[str, Document]) -> list[CheckCounts]:
    """The report request stage's checks of the ``requests`` it wrote (topic id -> request),
    ``topics`` and ``documents`` by id."""
    return [off_topic(OFF_TOPIC_REQUEST, {t: [r] for t, r in requests.items()}, topics,
                      documents)]


def subquestion_checks(questions: Mapping[str, Sequence[str]], n: int,
                       topics: Mapping[str, Topic],
                       documents: Mapping[str, Document]) -> list[CheckCounts]:
    """The sub-question stage's checks of the ``questions`` it wrote (topic id -> questions),
    ``n`` asked per topic; ``topics`` and ``documents`` by id."""
    few = CheckCounts(TOO_FEW_QUESTIONS)
    for topic, items in questions.items():
        few.add(topic, len(items) < n, f"{topic}: {len(items)} of {n} asked")
    return [off_topic(OFF_TOPIC_QUESTION, questions, topics, documents), few]


def passage_checks(passages: Iterable[Passage],
                   documents: Mapping[str, Document]) -> list[CheckCounts]:
    """The passage stage's check of the ``passages`` it wrote from ``documents`` (by id): each
    that names an entity or a number its source document lacks is flagged. Passages of other
    documents are not counted."""
    counts = CheckCounts(UNSUPPORTED_FACTS)
    sources: dict[str, Source] = {}
    for p in passages:
        doc = documents.get(p.doc_id or "")
        if doc is None:
            continue
        if doc.doc_id not in sources:
            sources[doc.doc_id] = Source.of(f"{doc.title or ''}\n{doc.text}")
        missing = sources[doc.doc_id].lacks(p.contents)
        counts.add(p.topic_id or NO_TOPIC, bool(missing),
                   f"{p.id}: {', '.join(missing[:5])} not in {doc.doc_id}")
    return [counts]


def merged(reports: Iterable[tuple[str, Iterable[Mapping]]]) -> list[CheckCounts]:
    """The counts of several jobs' reports (``(stage, [check records])``: a stage's shards),
    one :class:`CheckCounts` per stage and check, in the order first seen."""
    out: dict[tuple[str, str], CheckCounts] = {}
    for stage, records in reports:
        for record in records:
            counts = CheckCounts.from_json(stage, record)
            key = (stage, counts.check.name)
            if key in out:
                out[key].merge(counts)
            else:
                out[key] = counts
    return list(out.values())


def verdict(dataset: str, counts: Sequence[CheckCounts],
            threshold: float = UNFIT_SHARE) -> str | None:
    """One line when any check of any stage passes ``threshold``: the content is not fit for
    conclusions, the checks that failed, and what to use instead; ``None`` otherwise."""
    failed = [c for c in counts if c.unfit(threshold)]
    if not failed:
        return None
    named = ", ".join(f"{c.check.stage} {c.check.name} {c.flagged} of {c.checked} "
                      f"({c.share:.0%})" for c in failed)
    return (f"{dataset}: the generated content is not fit for conclusions: {named} flagged, "
            f"more than {threshold:.0%}; {MODEL_ADVICE}.")

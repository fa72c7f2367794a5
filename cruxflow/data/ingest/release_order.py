"""Number a corpus's clusters as a CRUX release numbers them, by matching texts.

The CRUX authors numbered the 50 DUC 2004 clusters in an order of their own (their loader reads
a dataset saved on their machine, DylanJoo/crux ``crux/tools/mds/ir_utils.py`` ``load_duc04``,
and numbers its rows), so ``<prefix>-<i>`` counted over NIST's sorted cluster names names other
clusters than the release does. The release's passages say which is which: ``<topic>:<doc>#<n>``
ids whose texts are rewritten from the cluster's documents. A cluster is the release topic

* with as many documents (chunk-documents, as ``--chunk-documents`` makes them) as the topic's
  passage ids number, and
* whose passages share the most words with the cluster's documents: the share of the topic's
  own words (content words, letters, 4 or more, lower-cased, that no other release topic's
  passages use: names, places; all its words when it has fewer than 20 such) that occur in
  the cluster,

assigned one to one, best pair first. Every cluster must find a topic with a clear margin over
the runner-up; otherwise the numbering is refused with the ambiguous clusters named.

**The DUC 2004 release order ships with cruxflow** (:func:`duc2004_release_order`,
``duc2004_release_order.tsv`` beside this module): for each of the 50 clusters of DUC 2004
task 2 (NIST's name, ``d30001t`` ...) the N under which the CRUX release calls it
``duc04-testb-N``. It was derived once with the matching above: each cluster's document text,
from a public copy of DUC 2004 task 2, matched against the release's passages (the CRUX
labeling tool's ``testb_passages.jsonl``, DylanJoo/crux-labeling, ids ``duc04-testb-N:...``)
with ``cruxflow ingest --format duc2004 ... --number-like testb_passages.jsonl``: one to one,
50 of 50 clusters, the lowest share of a cluster's own words found in its match 0.70, the
lowest margin to the next candidate 0.68 (recorded in the project's shared data notes). The
table is a fact about the release, not code; the DUC 2004 reader numbers clusters by it
whenever the prefix is ``duc04-testb``, so no passages file is needed for the release's ids.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cruxflow.data.errors import DataError
from cruxflow.data.ingest.crux_common import read_collection
from cruxflow.data.model import parse_passage_id

_WORD = re.compile(r"[a-z]{4,}")
DUC2004_RELEASE_ORDER = Path(__file__).with_name("duc2004_release_order.tsv")
MIN_MARGIN = 0.05   # best minus runner-up share
MIN_OWN_WORDS = 20


def duc2004_release_order() -> dict[str, int]:
    """``{NIST cluster name (lower case): the release's topic number}`` for DUC 2004 task 2's
    50 clusters (see the module's docstring for where the table comes from)."""
    lines = DUC2004_RELEASE_ORDER.read_text(encoding="utf-8").split("\n")
    if lines[0].split("\t") != ["nist_cluster", "release_index"]:
        raise DataError("not the release order table (nist_cluster, release_index)",
                        path=DUC2004_RELEASE_ORDER, record="line 1")
    out = {}
    for line in filter(None, lines[1:]):
        name, number = line.split("\t")
        out[name.lower()] = int(number)
    return out


def words(texts: Iterable[str]) -> set[str]:
    return {w for t in texts for w in _WORD.findall(t.lower())}


@dataclass
class ReleaseTopic:
    number: int
    n_documents: int
    words: set[str]


def read_release_topics(path, prefix: str, encoding: str = "utf-8") -> dict[int, ReleaseTopic]:
    """The release's topics ``<prefix>-<i>`` from a passages file (``{"id", "contents"}``): their
    number, how many documents their passage ids count (the largest document number + 1) and
    their passages' words. Passages of other prefixes are ignored."""
    texts, _ = read_collection(Path(path), encoding)
    docs: dict[int, int] = {}
    passage_words: dict[int, list[str]] = {}
    head = f"{prefix}-"
    for pid, text in texts.items():
        try:
            tid, doc, _ = parse_passage_id(pid)
        except ValueError:
            continue
        number = tid[len(head):]
        if not tid.startswith(head) or not number.isdigit():
            continue
        i = int(number)
        docs[i] = max(docs.get(i, 0), int(doc) + 1 if doc.isdigit() else 0)
        passage_words.setdefault(i, []).append(text)
    if not docs:
        raise DataError(f"no passage of a topic {prefix}-<i> (ids <topic>:<doc>#<n>)", path=path)
    return {i: ReleaseTopic(i, docs[i], words(passage_words[i])) for i in sorted(docs)}


def match_clusters(clusters: Mapping[str, tuple[int, set[str]]],
                   release: Mapping[int, ReleaseTopic], path) -> tuple[dict[str, int], dict]:
    """``{cluster source id: release number}`` for ``clusters`` (``{source id: (documents,
    words)}``), and a report of the match (per cluster: number, share, margin)."""
    # words shared by release topics say little about which is which: a topic is matched on
    # its own words (in the labeling tool's 50 DUC topics, at least 47 each)
    df = Counter(w for topic in release.values() for w in topic.words)
    own = {}
    for i, topic in release.items():
        mine = {w for w in topic.words if df[w] == 1}
        own[i] = mine if len(mine) >= MIN_OWN_WORDS else topic.words
    scores: list[tuple[float, str, int]] = []
    for cid, (n_docs, cwords) in clusters.items():
        for i, topic in release.items():
            if topic.n_documents != n_docs or not own[i]:
                continue
            scores.append((len(own[i] & cwords) / len(own[i]), cid, i))
    scores.sort(key=lambda s: (-s[0], s[1], s[2]))
    number: dict[str, int] = {}
    taken: set[int] = set()
    share: dict[str, float] = {}
    for s, cid, i in scores:
        if cid in number or i in taken:
            continue
        number[cid], share[cid] = i, s
        taken.add(i)
    unmatched = [c for c in clusters if c not in number]
    if unmatched:
        raise DataError(f"{len(unmatched)} clusters match no release topic with as many "
                        f"documents ({', '.join(unmatched[:5])}): is this the release's passages "
                        "file, and were the documents chunked as the release's "
                        "(--count-empty-documents --chunk-documents)?", path=path)
    detail = {}
    weak = []
    for cid, i in number.items():
        others = [s for s, c, j in scores if c == cid and j != i]
        margin = share[cid] - max(others, default=0.0)
        detail[cid] = {"number": i, "share": round(share[cid], 4), "margin": round(margin, 4)}
        if margin < MIN_MARGIN:
            weak.append(cid)
    if weak:
        raise DataError(f"{len(weak)} clusters match two release topics almost equally "
                        f"({', '.join(weak[:5])}): the numbering would be a guess", path=path)
    return number, detail

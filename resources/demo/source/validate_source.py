"""Check the demo corpus authoring files against FORMAT.md (run: python3 validate_source.py)."""

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCNO = re.compile(r"^(APW|NYT|XIE)\d{8}\.\d{4}$")
errors = []


def err(where, msg):
    errors.append(f"{where}: {msg}")


def words(text):
    return len(text.split())


clusters = sorted((HERE / "clusters").glob("*.json"))
seen_docnos, seen_clusters = set(), set()
for path in clusters:
    where = path.name
    try:
        c = json.loads(path.read_text(encoding="utf-8"))
    except Exception as exc:  # noqa: BLE001 - report any parse failure
        err(where, f"not valid JSON: {exc}")
        continue
    if not re.fullmatch(r"d4\d{4}t", c.get("cluster", "")):
        err(where, "cluster must look like d41001t")
    if c.get("cluster") in seen_clusters:
        err(where, "duplicate cluster id")
    seen_clusters.add(c.get("cluster"))
    if not 35 <= words(c.get("query", "")) <= 70:
        err(where, f"query has {words(c.get('query', ''))} words, want 40-60")
    if not 140 <= words(c.get("summary", "")) <= 270:
        err(where, f"summary has {words(c.get('summary', ''))} words, want 150-250")
    arts = c.get("articles", [])
    if not 3 <= len(arts) <= 5:
        err(where, f"{len(arts)} articles, want 3-5")
    qs = c.get("questions", [])
    if len(qs) != 10 or not all(q.strip().endswith("?") for q in qs):
        err(where, "want exactly 10 questions ending with '?'")
    keys = []
    docnos = [a.get("docno", "") for a in arts]
    if docnos != sorted(docnos):
        err(where, "articles must be sorted by docno")
    for a in arts:
        d = a.get("docno", "")
        if not DOCNO.match(d):
            err(where, f"bad docno {d!r}")
        if d in seen_docnos:
            err(where, f"docno {d} used twice")
        seen_docnos.add(d)
        if not a.get("headline"):
            err(where, f"{d}: missing headline")
        ps = a.get("passages", [])
        if not 2 <= len(ps) <= 3:
            err(where, f"{d}: {len(ps)} passages, want 2-3")
        for i, p in enumerate(ps):
            if not 60 <= words(p) <= 180:
                err(where, f"{d}#{i}: {words(p)} words, want 70-170")
            keys.append(f"{d}#{i}")
    ratings = c.get("ratings", {})
    if sorted(ratings) != sorted(keys):
        err(where, f"ratings keys {sorted(set(ratings) ^ set(keys))} do not match passages")
    for k, r in ratings.items():
        if len(r) != len(qs) or not all(isinstance(x, int) and 0 <= x <= 5 for x in r):
            err(where, f"ratings[{k}] must be {len(qs)} ints in 0..5")
    sr = c.get("summary_ratings", [])
    if len(sr) != len(qs) or not all(isinstance(x, int) and 0 <= x <= 5 for x in sr):
        err(where, "summary_ratings must be one int 0..5 per question")
    if ratings and qs:
        best = [max(r[j] for r in ratings.values()) for j in range(len(qs))]
        n_unanswerable = sum(b < 3 for b in best)
        if not 1 <= n_unanswerable <= 2:
            err(where, f"{n_unanswerable} questions with max passage rating < 3, want 1-2")

dpath = HERE / "distractors.jsonl"
if dpath.exists():
    n = 0
    for ln, line in enumerate(dpath.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        n += 1
        try:
            d = json.loads(line)
        except Exception as exc:  # noqa: BLE001
            err(f"distractors.jsonl:{ln}", f"not JSON: {exc}")
            continue
        if not DOCNO.match(d.get("docno", "")):
            err(f"distractors.jsonl:{ln}", f"bad docno {d.get('docno')!r}")
        if d.get("docno") in seen_docnos:
            err(f"distractors.jsonl:{ln}", f"docno {d.get('docno')} used twice")
        seen_docnos.add(d.get("docno"))
        if not d.get("headline"):
            err(f"distractors.jsonl:{ln}", "missing headline")
        if not 90 <= words(d.get("text", "")) <= 360:
            err(f"distractors.jsonl:{ln}",
                f"text has {words(d.get('text', ''))} words, want 100-350")
    print(f"{n} distractors")
print(f"{len(clusters)} clusters")
for e in errors:
    print("ERROR", e)
sys.exit(1 if errors else 0)

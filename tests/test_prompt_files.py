"""Prompts as data (cruxflow/prompts/*.toml): the published texts that define a method stay byte
for byte what they were when they were Python constants, the rubric the annotation app shows is
the rating prompt's own fields, and the LLM cache key follows the prompt's text."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

# SHA-256 of every prompt's text and of a render, recorded from the prompts as Python
# constants before they moved into template files (the commit that added this file).
BEFORE = Path(__file__).parent / "data" / "prompts" / "rendered_sha256.json"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rendered_digests() -> dict:
    """Every prompt's text and its render on fixed values, as SHA-256 digests."""
    from cruxflow.beyond.kpr import prompts as kpr
    from cruxflow.beyond.support import prompts as support
    from cruxflow.beyond.udcg import prompts as udcg
    from cruxflow.rerank import lancer
    from cruxflow.stages import prompts as crux

    templates = [*crux.PROMPTS.values(), *udcg.PROMPTS.values(), support.TREC2024_PROMPT,
                 support.SUPPORT_PROMPT, *kpr.PROMPTS, *lancer.PROMPTS.values()]
    out: dict = {}
    for t in templates:
        # braces and a non-ASCII letter in the values: substituted as given, never formatted
        values = {f: f"<{f} value {{x}} \u00fc>" for f in t.fields}
        out[t.id] = {"fields": list(t.fields), "text": _sha(t.text),
                     "render": _sha(t.render(**values))}
    out["udcg/AUTHORS_SYSTEM"] = _sha(udcg.AUTHORS_SYSTEM)
    out["kpr/EXTRACTION_DEMONSTRATION"] = _sha(kpr.EXTRACTION_DEMONSTRATION)
    out["kpr/AGGREGATION_DEMONSTRATION"] = _sha(kpr.AGGREGATION_DEMONSTRATION)
    out["lancer/SYSTEM"] = _sha(lancer.SYSTEM)
    for name, judge in support.JUDGE_PROMPTS.items():
        out[f"support/judge/{name}"] = (_sha(judge.render("A sentence.", "Title", "Text."))
                                        + _sha(judge.render("S", None, "T")))
    return out


def test_published_prompts_unchanged_byte_for_byte():
    before = json.loads(BEFORE.read_text())
    now = rendered_digests()
    assert sorted(now) == sorted(before)
    changed = [name for name in before if now[name] != before[name]]
    assert not changed, f"prompt text or render changed: {changed}"

"""Prompts as data (cruxflow/prompts/*.toml): the published texts that define a method stay byte
for byte what they were when they were Python constants, the rubric the annotation app shows is
the rating prompt's own fields, and the LLM cache key follows the prompt's text."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

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
    assert sorted(now) == sorted(before), (
        f"prompts not recorded: {sorted(set(now) - set(before))} (a new prompt: record it with "
        f"python tests/test_prompt_files.py --record); recorded, gone: "
        f"{sorted(set(before) - set(now))}")
    changed = [name for name in before if now[name] != before[name]]
    assert not changed, f"prompt text or render changed: {changed}"


def record_new_prompts() -> list[str]:
    """Add the digests of the prompts not recorded yet to :data:`BEFORE` (a recorded one is
    never rewritten: an edit to it is what the test above catches); the names added."""
    before = json.loads(BEFORE.read_text())
    new = {name: value for name, value in rendered_digests().items() if name not in before}
    BEFORE.write_text(json.dumps({**before, **new}, indent=1, sort_keys=True))
    return sorted(new)


# --- the files: every prompt is data, read the same way ----------------------------------------

CRUX_TOML = Path(__file__).parents[1] / "cruxflow" / "prompts" / "crux.toml"
RUBRIC_5 = "The context is highly relevant, complete, and accurate."


def _edited_crux(old: str, new: str):
    from cruxflow.llm.prompts import prompts_from_toml

    text = CRUX_TOML.read_text(encoding="utf-8")
    assert text.count(old) == 1
    return prompts_from_toml(text.replace(old, new))


def test_every_prompt_file_declares_its_source_fields_and_parts():
    from cruxflow.llm.prompts import PROMPT_DIR, load_prompts

    methods = sorted(p.stem for p in PROMPT_DIR.glob("*.toml"))
    # every file is a method's: some module of the package loads it
    sources = "\n".join(p.read_text() for p in PROMPT_DIR.parent.rglob("*.py"))
    assert methods and all(f'load_prompts("{m}")' in sources for m in methods), methods
    for method in methods:
        for name, prompt in load_prompts(method).items():
            assert prompt.name == name and prompt.version and len(prompt.source) > 20, name
            for f in prompt.fields:
                assert f"{{{f}}}" in prompt.text
            assert "${" not in prompt.text, name          # every part was put in


def test_the_rating_rubric_is_data_and_both_layouts_are_built_from_it():
    from cruxflow.stages.prompts import RATING, RATING_PASSAGE_FIRST

    grades = [g for g, _ in RATING.parts["rubric"]]
    assert grades == [5, 4, 3, 2, 1, 0]
    assert RATING.parts["rubric"][0][1] == RUBRIC_5
    for prompt in (RATING, RATING_PASSAGE_FIRST):
        assert prompt.text.startswith(f"Instruction: {RATING.parts['instruction']} Do not "
                                      "write anything except the rating.\n\nGuideline:\n")
        for grade, text in RATING.parts["rubric"]:
            assert f"\n- {grade}: {text}\n" in prompt.text
    # an edit to the rubric reaches both layouts, and nothing else
    edited = _edited_crux(RUBRIC_5, "Everything needed.")
    for name in ("rating", "rating-passage-first"):
        assert "- 5: Everything needed.\n" in edited[name].text
        assert RUBRIC_5 not in edited[name].text
    assert edited["passages"] == load_crux()["passages"]


def load_crux():
    from cruxflow.llm.prompts import load_prompts

    return load_prompts("crux")


def test_the_annotation_app_shows_the_rating_prompts_own_parts(monkeypatch):
    """The page shows what the judge is told: the instruction and the rubric levels are the
    prompt's parts, not a reading of its text (an edit to the file changes both)."""
    pytest.importorskip("starlette")
    from cruxflow.annotate import app

    instruction, grades = app.rubric()
    assert instruction == ("Determine whether the question can be answered based on the "
                           "provided context? Rate the context with on a scale from 0 to 5 "
                           "according to the guideline below.")
    assert grades[0] == (5, RUBRIC_5) and grades[-1] == (
        0, "The context is not relevant or complete at all.")
    edited = _edited_crux(RUBRIC_5, "Everything needed.")["rating"]
    monkeypatch.setattr(app, "RATING", edited)
    assert app.rubric()[1][0] == (5, "Everything needed.")


def test_the_llm_cache_key_follows_the_prompt_text(monkeypatch):
    """A request's cache key holds its rendered prompt: the same file gives the same keys, an
    edit to the rubric a new key for every rating request (so no stale answer is reused)."""
    from cruxflow.llm.cache import cache_key
    from cruxflow.llm.prompts import prompts_from_toml
    from cruxflow.stages import ratings

    items = [(["Who wrote it?", "When?"], "A passage about a book.")]
    identity = {"kind": "llamacpp", "model": "m.gguf"}

    def keys():
        requests, _ = ratings.rating_requests(items)
        return [cache_key(identity, r) for r in requests]

    before = keys()
    same = prompts_from_toml(CRUX_TOML.read_text(encoding="utf-8"))["rating"]
    monkeypatch.setitem(ratings.LAYOUTS, "paper", same)
    assert keys() == before
    monkeypatch.setitem(ratings.LAYOUTS, "paper",
                        _edited_crux(RUBRIC_5, "Everything needed.")["rating"])
    after = keys()
    assert len(after) == 2 and not set(after) & set(before)


# --- the CRUX authors' later prompts: their code's text, byte for byte -------------------------

# DylanJoo/crux at commit dabfb0a, pasted as the authors wrote them (published prompt texts that
# define their method): crux/augmentation/gen_ratings_offload.py's prompt_template ...
AUTHORS_AUGMENTATION = """\
Instruction:
Determine whether the question can be answered based on the provided context. Rate the context \
on a scale from 0 to 5 according to the guideline below. Do not write anything except the rating.

Guideline:\u0020
- 5: The context is highly relevant, complete, and accurate to the question.
- 4: The context is mostly relevant and complete but may have minor gaps or inaccuracies to the \
question.
- 3: The context is partially relevant and complete, with noticeable gaps or inaccuracies to the \
question.
- 2: The context has limited relevance and completeness, with significant gaps or inaccuracies \
to the question.
- 1: The context is minimally relevant or complete, with substantial shortcomings to the \
question.
- 0: The context is not relevant or complete at all.

Question: {question}
Context: {context}\u0020

Rating:\u0020"""
# ... and crux/prompts/researchy.py's query generator (INST, its template and function)
AUTHORS_INST = """Write ten google-like search keywords or questions for search engines based \
on the user request to help generate relevant information.
Each aspect of the user request should yield separate queries.
Look for possible details, such as specific numbers, causes, methodolgies, conflicting \
information, etc., if applicable.
They may not need to be grammatically correct sentences.
They will be used to query a semantic search engine.
Return the ten queries with one query in each line WITHOUT numbering.
"""


def authors_query_generator(q: str) -> str:
    p = "Instruction: {INST}\n\nQuestion: {Q}\n\n{PREFIX}"
    p = p.replace("{INST}", AUTHORS_INST).strip()
    p = p.replace("{Q}", q)
    return p.replace("{PREFIX}", "Search keywords or questions:").strip()


def test_the_authors_later_prompts_are_their_text():
    from cruxflow.stages.prompts import RATING_AUGMENTATION, SUBQUESTIONS_REQUEST

    document = "A passage {x} with \u00fc and braces."
    # the authors' context: the passage's first 2,048 words, joined by single spaces
    context = " ".join(document.split()[:2048])
    assert RATING_AUGMENTATION.render(question="Who {q}?", context=context) == \
        AUTHORS_AUGMENTATION.replace("{question}", "Who {q}?").replace("{context}", context)
    assert AUTHORS_AUGMENTATION.endswith("Rating: ") and "\nGuideline: \n" in \
        AUTHORS_AUGMENTATION
    request = "Why did the river flood in March?"
    assert SUBQUESTIONS_REQUEST.render(request=request) == authors_query_generator(request)
    assert "\n\n\nQuestion: " in SUBQUESTIONS_REQUEST.text   # INST's own newline, then two
    for prompt in (RATING_AUGMENTATION, SUBQUESTIONS_REQUEST):
        assert "dabfb0a" in prompt.source and prompt.version == "crux-dabfb0a"


if __name__ == "__main__":     # docs/adding-a-prompt.md
    import sys

    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/test_prompt_files.py --record")
    print("recorded:", ", ".join(record_new_prompts()) or "nothing new")

"""KPR's prompts (Long2RAG App. B and App. A.2) as versioned templates, read from
``cruxflow/prompts/kpr.toml``, the demonstrations that fill their ``{demonstration}`` field
(ours: the paper does not print them), and the decoding settings of each step."""

from __future__ import annotations

from cruxflow.llm import Sampling
from cruxflow.llm.prompts import load_prompts

VERSION = "kpr-v1"

# Copied from the paper's appendix (App. B and App. A.2) into cruxflow/prompts/kpr.toml, with
# where each comes from; the paper prints "<One-shot Demonstration>" where its demonstration
# went without giving it: that place is the ``{demonstration}`` field, filled with our own
# examples, kept in the same file as the prompts' example parts.
PROMPT_FILE = load_prompts("kpr")
EXTRACTION = PROMPT_FILE["kpr_extract"]
EXTRACTION_MORE = PROMPT_FILE["kpr_extract_more"]
ENTAILMENT = PROMPT_FILE["kpr_entailment"]
AGGREGATION = PROMPT_FILE["kpr_aggregate"]
FILTER = PROMPT_FILE["kpr_filter"]
PROMPTS = (EXTRACTION, EXTRACTION_MORE, ENTAILMENT, AGGREGATION, FILTER)

# Ours (the paper does not print its demonstrations): (point, span) pairs of the example text.
EXTRACTION_DEMO_POINTS = EXTRACTION.parts["example_points"]
EXTRACTION_DEMONSTRATION = (
    f"[Query]: {EXTRACTION.parts['example_query']}\n"
    f"[Text]: {EXTRACTION.parts['example_text']}\n"
    "[Key Point]\n"
    + "".join(f"Point {i}: <point_start>{p}<point_end><span_start>{s}<span_end>\n"
              for i, (p, s) in enumerate(EXTRACTION_DEMO_POINTS, 1))
)
AGGREGATION_DEMONSTRATION = AGGREGATION.parts["example"]

# Decoding. The paper: greedy evaluation with a fixed seed (footnote 7); extraction with
# GPT-4-Turbo, settings not given: greedy here too, so that extraction is reproducible.
EXTRACT_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=1024, seed=0)
JUDGE_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=256, seed=0)
AGGREGATE_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=1024, seed=0)
FILTER_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=1, seed=0, logprobs=20)
FILTER_THRESHOLD = 0.7  # App. A.2: 8.7% false positives at 0.7

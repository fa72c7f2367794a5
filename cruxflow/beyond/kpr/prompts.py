"""KPR's prompts (Long2RAG App. B and App. A.2) as versioned templates, the demonstrations that
fill their ``{demonstration}`` field (ours: the paper does not print them), and the decoding
settings of each step."""

from __future__ import annotations

from cruxflow.llm import Sampling
from cruxflow.llm.prompts import PromptTemplate

VERSION = "kpr-v1"

# Copied from the paper's appendix (App. B and App. A.2), wording and typographic quotes
# unchanged. The paper's PDF wraps the prompt boxes at ~50 characters, so the line breaks are
# ours, and one token it breaks mid-word ("<span_s" / "tart>") is joined. The paper prints
# "<One-shot Demonstration>" where its demonstration went without giving it: that place is the
# ``{demonstration}`` field, filled with our own examples below.

EXTRACTION = PromptTemplate(
    name="kpr_extract",
    version=VERSION,
    fields=("demonstration", "query", "text"),
    text=(
        "Based on the text provided, identify key points in the text that directly help in "
        "responding to the query. Format your response as follows: each point should start "
        "with “Point [number]:”, followed by its content and spans in the text that entails "
        "the key point.\n"
        "IMPORTANT: The output must be of the format “ Point [number]: "
        "<point_start>[content of point] "
        "<point_end><span_start>[span1]<span_end><span_start>[span2]<span_end>”\n"
        "IMPORTANT: Ensure each point is helpful in responding to the query. Keep the point "
        "using the original language and do not add explanations.\n"
        "IMPORTANT: Each span must be a single consecutive verbatim span from the "
        "corresponding passages. Copy verbatim the spans, don’t modify any word!\n"
        "Here is an example:\n"
        "{demonstration}\n"
        "Remember:\n"
        "- key points can be abstracted or summarized, but the span must be a copy of the "
        "original text. The content of the key point does NOT need to be the same as that of "
        "the span.\n"
        "- These key points must be helpful in responding to the query.\n"
        "- Copy verbatim the spans, don’t modify any word! If there are multiple spans for a "
        "point, separate them with <span_start> and <span_end> tokens.\n"
        "[Query]: {query}\n"
        "[Text]: {text}\n"
        "[Key Point]\n"
    ),
)

# Ours: the paper runs "multiple rounds of extraction, each time prompting GPT-4 to consider
# previously overlooked information" (Sec. 3.3) without printing that prompt. A later round is
# the extraction prompt with the points found so far added before "[Key Point]".
EXTRACTION_MORE = PromptTemplate(
    name="kpr_extract_more",
    version=VERSION,
    fields=("demonstration", "query", "text", "points"),
    text=EXTRACTION.text.rsplit("[Key Point]\n", 1)[0] + (
        "[Key Points Found So Far]\n"
        "{points}\n"
        "Consider the information in the text that the key points found so far overlooked: "
        "identify the other key points in the text that directly help in responding to the "
        "query, in the same format. Do not repeat the key points found so far.\n"
        "[Key Point]\n"
    ),
)

ENTAILMENT = PromptTemplate(
    name="kpr_entailment",
    version=VERSION,
    fields=("document", "claim"),
    text=(
        "Your task is to determine whether a claim is entailed with a document.\n"
        "You should evaluate whether the information in the document supports or describes "
        "the claim provided.\n"
        "You must provide an answer based on whether the document does entail the claim, does "
        "not entail the claim, or is neutral.\n"
        "If the claim is entailed, you should provide snippets from the document that support "
        "this claim.\n"
        "Document: {document}\n"
        "Claim: {claim}\n"
        "Provide your answer as [yes], [no], or [neutral]. State your reason behind the "
        "answer and provide snippets from the document that support this claim if your answer "
        "is [yes].\n"
    ),
)

AGGREGATION = PromptTemplate(
    name="kpr_aggregate",
    version=VERSION,
    fields=("demonstration", "points"),
    text=(
        "Based on the points extracted from a piece of text, identify and remove any "
        "duplicate points to streamline the list.\n"
        "REMEMBER:\n"
        "- The de-duplicated points need to contain all the original points.\n"
        "- An original point cannot exist in two different de-duplicated points at the same "
        "time.\n"
        "- Format your response as follows: each unique point should start with “Point "
        "[number]:”, followed by its content and corresponding original point numbers. The "
        "corresponding original point numbers should be wrapped with [].\n"
        "Here is an example:\n"
        "{demonstration}\n"
        "Remember to not add any new points, only de-duplicate the existing ones. And do not "
        "add any explanations.\n"
        "[Original Points]\n"
        "{points}\n"
        "[De-duplicate Points]\n"
    ),
)

FILTER = PromptTemplate(
    name="kpr_filter",
    version=VERSION,
    fields=("question", "point"),
    text=(
        "You are a helpful AI assistant. Your role is to evaluate whether a piece of "
        "information can serve as a key point in answering the question.\n"
        "question: {question}\n"
        "information: {point}\n"
        "Can the above information directly help in addressing the question (thus being a "
        "key point)? You must respond with YES or NO."
    ),
)

PROMPTS = (EXTRACTION, EXTRACTION_MORE, ENTAILMENT, AGGREGATION, FILTER)

# Ours (the paper does not print its demonstrations).
EXTRACTION_DEMO_POINTS = (
    ("Trees stop making chlorophyll in autumn, so the green colour of the leaves fades.",
     "In autumn, trees stop producing chlorophyll, the green pigment that captures "
     "sunlight."),
    ("Yellow and orange carotenoids, present in the leaves all along, become visible.",
     "As the chlorophyll breaks down, yellow and orange carotenoids that were present all "
     "along become visible."),
    ("Red colours come from anthocyanins made from sugars trapped in the leaves.",
     "Some trees also make red anthocyanins from sugars trapped in the leaves."),
)
EXTRACTION_DEMONSTRATION = (
    "[Query]: Why do leaves change colour in autumn?\n"
    "[Text]: In autumn, trees stop producing chlorophyll, the green pigment that captures "
    "sunlight. As the chlorophyll breaks down, yellow and orange carotenoids that were present "
    "all along become visible. Some trees also make red anthocyanins from sugars trapped in "
    "the leaves. The park's visitor centre is open daily from 8 am.\n"
    "[Key Point]\n"
    + "".join(f"Point {i}: <point_start>{p}<point_end><span_start>{s}<span_end>\n"
              for i, (p, s) in enumerate(EXTRACTION_DEMO_POINTS, 1))
)
AGGREGATION_DEMONSTRATION = (
    "[Original Points]\n"
    "Point 1: Trees stop making chlorophyll in autumn.\n"
    "Point 2: Red colours come from anthocyanins.\n"
    "Point 3: In autumn trees no longer produce chlorophyll, so the green fades.\n"
    "[De-duplicate Points]\n"
    "Point 1: Trees stop producing chlorophyll in autumn, so the green fades. [1, 3]\n"
    "Point 2: Red colours come from anthocyanins. [2]\n"
)

# Decoding. The paper: greedy evaluation with a fixed seed (footnote 7); extraction with
# GPT-4-Turbo, settings not given: greedy here too, so that extraction is reproducible.
EXTRACT_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=1024, seed=0)
JUDGE_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=256, seed=0)
AGGREGATE_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=1024, seed=0)
FILTER_SAMPLING = Sampling(temperature=0.0, top_p=1.0, max_tokens=1, seed=0, logprobs=20)
FILTER_THRESHOLD = 0.7  # App. A.2: 8.7% false positives at 0.7

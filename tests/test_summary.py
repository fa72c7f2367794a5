"""The demo's closing summary: the headline table and its findings, computed from the file."""

from __future__ import annotations

import re

from cruxflow.paper.summary import summary

# Rows of results/metrics/demo-crux/eta3/context_metrics.tsv as a demo run wrote them (k = |Z*|
# and one k = 10 row, which the headline leaves out).
TSV = ("system\tk\ttopics\tmissing_in_run\tCov\talpha_nDCG_crux\tDen\tR\tR(rel=2)\tAP\t"
       "nDCG\talpha_nDCG_published\n") + """\
oracle\toracle\t10\t0\t1.0000\t1.0000\t1.0000\t0.5176\t1.0000\t0.5176\t0.7900\t0.8885
random-relevant\toracle\t10\t0\t0.7190\t0.6810\t0.8470\t0.5180\t0.5000\t0.5180\t0.6240\t0.6040
random-relevant\t10\t10\t0\t0.9780\t0.8900\t0.7290\t0.9560\t0.9000\t0.9560\t0.8980\t0.7870
bm25\toracle\t10\t0\t0.7080\t0.7810\t0.8430\t0.5180\t0.5000\t0.5180\t0.6180\t0.6920
dense\toracle\t10\t0\t0.7870\t0.7800\t0.8890\t0.5180\t0.5000\t0.5180\t0.6210\t0.6930
bm25+mmr\toracle\t10\t0\t0.2610\t0.3250\t0.4820\t0.1330\t0.1000\t0.1220\t0.2340\t0.2860
dense+mmr\toracle\t10\t0\t0.2490\t0.3180\t0.4690\t0.1230\t0.1000\t0.1180\t0.2300\t0.2800
"""


def test_summary_points_to_the_headline_and_says_what_it_shows(tmp_path):
    metrics = tmp_path / "results" / "metrics" / "demo-crux" / "eta3"
    metrics.mkdir(parents=True)
    (metrics / "context_metrics.tsv").write_text(TSV)
    (tmp_path / "results" / "tables").mkdir()
    text = summary(tmp_path)
    assert "Context metrics for demo-crux; RAG reports for none" in text
    table = text[text.index("system"):text.index("Random relevant")]
    assert "0.978" not in table                         # the k = 10 row is not shown
    assert re.search(r"^random-relevant +0\.719 ", table, re.M)
    assert "alpha_nDCG_crux@oracle" in text and "R@oracle" in text
    # 0.719 against 1.000; MMR keeps 0.261 / 0.708 = 36.9% (bm25) and 0.249 / 0.787 = 31.6%
    assert "cover 0.72 of the sub-questions where Z* covers 1.00" in text
    assert "MMR re-ranking keeps 32%-37% of its first stage's coverage" in text
    assert f"{tmp_path / 'results' / 'report.html'}  (not made)" in text
    assert f"{tmp_path / 'results' / 'tables'}\n" in text


def test_summary_counts_what_the_llm_wrote_per_stage_and_dataset(tmp_path):
    """From the jobs' calls logs, written here by hand: two passage shards of one dataset are
    added up; a stage without malformed outputs says 0."""
    import json

    def calls(path, **counts):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"rule": path.parts[-3], "requests": 0, "calls": 0,
                                    "parse_failures": 0, **counts}))

    logs = tmp_path / "logs"
    calls(logs / "passages/own/shard0-of2.calls.json", requests=3, calls=5, malformed=2,
          parse_failures=1)
    calls(logs / "passages/own/shard1-of2.calls.json", requests=2, calls=2)
    (logs / "report_requests").mkdir()
    (logs / "report_requests/own.calls.json").write_text(json.dumps(
        {"rule": "report_requests", "requests": 1, "calls": 3, "malformed": 2,
         "parse_failures": 0}))
    text = summary(tmp_path)
    assert re.search(r"^  passages +own +5 +7 +2 +1$", text, re.M), text
    assert re.search(r"^  report_requests +own +1 +3 +2 +0$", text, re.M), text
    assert "failed every attempt (kept as their fallback)" in text


def test_summary_says_when_the_generated_content_is_unfit(tmp_path):
    """From the stages' checks logs, written here by hand: a dataset's two passage shards are
    added up per topic; its stages' shares (3 of 5 passages, 1 of 1 request) pass 25%, and the
    summary says so in one line naming them; another dataset's content passes (no line)."""
    import json

    def checks(path, rule, *records):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"rule": rule, "dataset": path.parts[-2], "checks": [
            {"check": c, "items": "", "topics": t, "example": e} for c, t, e in records]}))

    logs = tmp_path / "logs"
    checks(logs / "passages/own/shard0-of2.checks.json", "passages",
           ("unsupported_facts", {"a": [2, 3]}, "a:0#1: Vice not in a:0"))
    checks(logs / "passages/own/shard1-of2.checks.json", "passages",
           ("unsupported_facts", {"b": [1, 2]}, "b:0#0: 1971 not in b:0"))
    checks(logs / "report_requests/own.checks.json", "report_requests",
           ("off_topic", {"a": [1, 1]}, "a: 'Please format each document.'"))
    checks(logs / "subquestions/own.checks.json", "subquestions",
           ("off_topic", {"a": [0, 3]}, None), ("too_few_questions", {"a": [0, 1]}, None))
    checks(logs / "passages/fine/shard0-of1.checks.json", "passages",
           ("unsupported_facts", {"c": [1, 4]}, "c:0#0: X not in c:0"))
    text = summary(tmp_path)
    assert re.search(r"^  own +passages +3 of 5 passages name entities or numbers their source "
                     r"document lacks \(a 2/3, b 1/2\)$", text, re.M), text
    assert "e.g. a:0#1: Vice not in a:0" in text
    assert re.search(r"^  own +report_requests +1 of 1 report requests share no content word",
                     text, re.M)
    assert re.search(r"^  own +subquestions +0 of 1 topics have fewer sub-questions than asked$",
                     text, re.M)
    unfit = [line for line in text.splitlines() if "not fit for conclusions" in line]
    assert unfit == [
        "  own: the generated content is not fit for conclusions: report_requests off_topic 1 "
        "of 1 (100%), passages unsupported_facts 3 of 5 (60%) flagged, more than 25%; generate "
        "it with an instruction-tuned LLM of 8B parameters or more (the paper used "
        "Llama-3.1-70B-Instruct; presets/paper.yaml)."]
    # 1 of 4 is 25%, not more: the other dataset's content passes
    assert re.search(r"^  fine +passages +1 of 4 passages", text, re.M)

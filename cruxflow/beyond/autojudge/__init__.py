"""cruxflow as a TREC AutoJudge judge (trec-auto-judge/auto-judge-base, the ``autojudge`` extra).

auto-judge-base defines what a judge is: three protocols that a judge class implements
(``create_nuggets``, ``create_qrels`` and ``judge``, the leaderboard), the containers they
return (``NuggetBanks``, ``Qrels``, ``Leaderboard``), their verification, and a runner
(``run_judge``, and the ``auto-judge run --workflow workflow.yml`` command) that calls them on
a track's RAG responses and topics and writes and checks what they return.
:class:`~cruxflow.beyond.autojudge.judge.CruxflowJudge` implements the three over CRUX data
(docs/autojudge.md):

* nuggets: each topic's sub-questions as a NuggetBank (:func:`cruxflow.data.nuggets.nugget_banks`,
  the same bank ``cruxflow export --format nuggetbank`` writes);
* qrels: the topic's judged passages with CRUX's relevance grades
  (:func:`cruxflow.metrics.judgments.relevance_qrels`);
* leaderboard: per run and topic, Cov of the passages the response cites (Eq. 3 of the paper,
  the registry's ``Cov``), the share of them that is judged, and with an LLM
  judge Cov(y) of the response's text (the judged rating of the text against each
  sub-question, :func:`cruxflow.rag.reports.judge_reports`).

:mod:`.offline` imports auto-judge-base without the network: at import it asks NLTK for two
data packages and tries to download them when missing.
"""

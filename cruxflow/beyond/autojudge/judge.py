"""auto-judge-base's judge protocol over CRUX data (see the package's docstring and
docs/autojudge.md).

The judge reads its CRUX data from the ``dataset`` setting (workflow.yml ``settings``, or
``-S dataset=...`` on the command line): a prepared dataset directory (``cruxflow ingest``'s
output) or anything ``cruxflow ingest --format crux`` reads (a release subset folder such as
``crux-mds-duc04``, the paper-era files). Its other settings: ``eta`` (3), ``collection`` (the
NuggetBank's test collection; default: the data folder's name), and ``report_judge``, an LLM
backend as cruxflow's ``llm.backends`` entries spell them (``{kind: llamacpp, model: ...}``,
``{kind: openai, base_url: ..., model: ...}``), or ``llm_config`` for the LLM that
auto-judge-base's runner hands the judge (an OpenAI-compatible server): with one, the
leaderboard adds Cov(y) of each response's text; ``llm_cache`` names its cache file.

Every RAG topic must be a topic of the data: a topic the data does not hold has no
sub-questions or ratings to judge with, and is an error naming it, before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from cruxflow.beyond.autojudge.offline import import_autojudge
from cruxflow.data import nuggets as crux_nuggets
from cruxflow.data.errors import DataError
from cruxflow.data.model import Dataset
from cruxflow.metrics.judgments import derive, relevance_qrels
from cruxflow.metrics.options import DEFAULTS, MetricOptions
from cruxflow.metrics.scorer import ContextScorer, score_rated_texts

ab = import_autojudge(__name__)
from autojudge_base.nugget_data import NuggetBank, NuggetBanks  # noqa: E402 - after the import

# The leaderboard's measures, with what each means (written to <filebase>.measures.yml).
CITED_COV = ab.MeasureSpec(
    "CITED_COV", float, "Cov (CRUX Eq. 3) of the passages the response cites: the share of the "
    "topic's answerable sub-questions (some judged passage rates >= eta) that a cited passage "
    "rates >= eta; an unjudged passage answers nothing")
CITED_JUDGED = ab.MeasureSpec(
    "CITED_JUDGED", float, "the share of the cited passages that the CRUX data rates (1 when "
    "the response cites nothing)")
CITED = ab.MeasureSpec("CITED", int, "distinct passages the response cites")
REPORT_COV = ab.MeasureSpec(
    "REPORT_COV", float, "Cov(y): the share of the topic's answerable sub-questions that the LLM "
    "judge rates the response's text >= eta on (the CRUX answerability prompt)")


@lru_cache(maxsize=8)
def _read_dataset(path: str) -> Dataset:
    folder = Path(path)
    if (folder / "topics.jsonl").is_file():
        return Dataset.load(folder, with_passages=False)
    from cruxflow.data.ingest import IngestOptions, ingest

    return ingest("crux", folder, IngestOptions())[0]


def cited_passages(response) -> list[str]:
    """The passages a response cites, in order of first citation (each sentence's citations in
    their priority order; RAG 2024 indices resolved through ``references``)."""
    seen: dict[str, None] = {}
    for sentence in response.get_sentences_with_citations():
        for doc in sentence.citations or ():
            seen.setdefault(str(doc), None)
    return list(seen)


class CruxflowJudge:
    """A judge of auto-judge-base's three protocols over CRUX data (module docstring)."""

    nugget_banks_type = NuggetBanks

    # --- settings ------------------------------------------------------------------------------

    @staticmethod
    def _data(settings: Mapping[str, Any], topics: Sequence) -> tuple[Dataset, int]:
        if not settings.get("dataset"):
            raise DataError("the cruxflow judge needs the setting 'dataset': a cruxflow dataset "
                            "directory or a CRUX release subset folder (workflow.yml settings, "
                            "or -S dataset=PATH)")
        dataset = _read_dataset(str(settings["dataset"]))
        unknown = [t.request_id for t in topics if t.request_id not in dataset.topics]
        if unknown:
            raise DataError(f"{len(unknown)} RAG topics are not topics of the CRUX data ("
                            + ", ".join(unknown[:10]) + (", ..." if len(unknown) > 10 else "")
                            + "): it has no sub-questions or ratings to judge them with",
                            path=settings["dataset"])
        return dataset, int(settings.get("eta", DEFAULTS.eta))

    # --- the three protocols -------------------------------------------------------------------

    def create_nuggets(self, rag_responses: Iterable | None, rag_topics: Sequence,
                       llm_config=None, nugget_banks=None, corpus=None, **settings):
        """Each topic's sub-questions as a NuggetBank, the passages that answer a question
        (rating >= eta) as its references."""
        dataset, eta = self._data(settings, rag_topics)
        collection = settings.get("collection") or Path(str(settings["dataset"])).name
        wanted = {t.request_id for t in rag_topics}
        banks = [NuggetBank.model_validate(b)
                 for b in crux_nuggets.nugget_banks(dataset, eta, collection)
                 if b["query_id"] in wanted]
        return NuggetBanks.from_banks_list(banks)

    def create_qrels(self, rag_responses: Iterable | None, rag_topics: Sequence,
                     llm_config=None, nugget_banks=None, corpus=None, **settings):
        """Every judged passage of each topic with CRUX's relevance grade (P**, the passages
        an ideal context needs, above the other judged ones: "2-1"), the qrels that
        ``cruxflow evaluate`` scores R, P, AP and nDCG on."""
        dataset, eta = self._data(settings, rag_topics)
        wanted = {t.request_id for t in rag_topics}
        judgments = {t: j for t, j in derive(dataset, eta).items() if t in wanted}
        graded = relevance_qrels(judgments, dataset.ratings_by_topic())
        rows = [(t, p, g) for t, grades in graded.items() for p, g in grades.items()]
        return ab.build_qrels(records=rows, spec=ab.QrelsSpec(
            topic_id=lambda r: r[0], doc_id=lambda r: r[1], grade=lambda r: r[2]))

    def judge(self, rag_responses: Iterable, rag_topics: Sequence, llm_config=None,
              nugget_banks=None, qrels=None, corpus=None, **settings):
        """Per run and topic: Cov of the cited passages, the share of them judged, their
        number, and Cov(y) of the text when an LLM judge is set."""
        dataset, eta = self._data(settings, rag_topics)
        responses = list(rag_responses)
        judgments = derive(dataset, eta)
        scorer = ContextScorer(dataset, judgments, options=MetricOptions(eta=eta))
        report_cov = self._report_coverage(responses, dataset, judgments, eta, settings,
                                           llm_config)
        spec = ab.LeaderboardSpec(measures=(CITED_COV, CITED_JUDGED, CITED)
                                  + ((REPORT_COV,) if report_cov is not None else ()))
        builder = ab.LeaderboardBuilder(spec)
        for response in responses:
            tid = response.metadata.topic_id
            if tid not in dataset.topics:
                raise DataError(f"a response of run {response.metadata.run_id!r} answers topic "
                                f"{tid!r}, which the CRUX data does not hold",
                                path=settings["dataset"])
        cited = [list(dict.fromkeys(cited_passages(r))) for r in responses]
        depth = max((len(c) for c in cited), default=0) or 1
        # Cov and Judged of each response's cited passages, as a context (the engine's);
        # unrated passages answer nothing
        values = scorer.context_values([(r.metadata.topic_id, c) for r, c in
                                        zip(responses, cited, strict=True)],
                                       [f"Cov@{depth}", f"Judged@{depth}"])
        for i, response in enumerate(responses):
            cov, judged = values[f"Cov@{depth}"][i], values[f"Judged@{depth}"][i]
            values_i = {"CITED_COV": 0.0 if cov != cov else float(cov),  # no answerable: 0
                        "CITED_JUDGED": float(judged) if cited[i] else 1.0,
                        "CITED": len(cited[i])}
            if report_cov is not None:
                values_i["REPORT_COV"] = report_cov[i]
            builder.add(run_id=response.metadata.run_id, topic_id=response.metadata.topic_id,
                        values=values_i)
        return builder.build(expected_topic_ids=[t.request_id for t in rag_topics],
                             on_missing="fix_aggregate")

    # --- Cov(y) with an LLM --------------------------------------------------------------------

    @staticmethod
    def _report_coverage(responses: list, dataset: Dataset, judgments: Mapping, eta: int,
                         settings: Mapping[str, Any], llm_config) -> list[float] | None:
        backend = settings.get("report_judge")
        if not backend:
            return None
        if backend == "llm_config":
            if llm_config is None or not getattr(llm_config, "base_url", None):
                raise DataError("report_judge: llm_config needs auto-judge-base's llm_config "
                                "with a base_url (an OpenAI-compatible server)")
            backend = {"kind": "openai", "model": llm_config.model,
                       "base_url": llm_config.base_url}
        if not isinstance(backend, Mapping) or "kind" not in backend:
            raise DataError("report_judge must be an llm.backends entry ({kind: ..., model: "
                            "...}) or 'llm_config'")
        from cruxflow.llm import make_runner
        from cruxflow.rag.reports import judge_reports

        runner = make_runner({"cache": settings.get("llm_cache"),
                              "backends": {"report_judge": dict(backend)}}, "report_judge",
                             desc="AutoJudge Cov(y)")
        items = [(dataset.topics[r.metadata.topic_id].questions, r.get_report_text())
                 for r in responses]
        rated = judge_reports(items, runner)
        values = score_rated_texts([(r.metadata.topic_id, ratings) for r, (ratings, _) in
                                    zip(responses, rated, strict=True)], ["Cov@1"],
                                   judgments, options=MetricOptions(eta=eta))["Cov@1"]
        return [0.0 if v != v else float(v) for v in values.tolist()]

"""File to file: ``run_udcg`` scores every item of an input file (and, with the protocol,
correlates the metrics with end-to-end answers); ``cruxflow udcg`` is its console command."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from cruxflow.beyond.udcg import steps
from cruxflow.beyond.udcg.data import UdcgItem, given_models, read_items
from cruxflow.beyond.udcg.metric import (
    ThetaWeights,
    fit_udcg_theta,
    load_theta,
    passage_utility,
    save_theta,
    udcg,
    udcg_theta,
)
from cruxflow.beyond.udcg.options import UdcgOptions
from cruxflow.beyond.udcg.prompts import ANSWER, AUTHORS_UTILITY
from cruxflow.beyond.udcg.protocol import (
    IDEAL_VALUE,
    IR_NAMES,
    correlations,
    ideal_grade,
    ir_metrics,
    sample_contexts,
)
from cruxflow.data.errors import DataError
from cruxflow.data.io import write_json, write_jsonl, write_tsv
from cruxflow.llm import LazyRunner, LLMRunner
from cruxflow.metrics.stats import mean_of_defined


@dataclass
class _Scored:
    passages: list[dict]
    contexts: list[dict]
    answers: list[dict]
    info: dict


def _relevance(items: list[UdcgItem], path, opts: UdcgOptions, llm: LazyRunner,
               limit: int | None) -> dict[tuple[str, str], tuple[bool, str]]:
    """``(item, passage) -> (relevant, source)`` for each item's first ``limit`` passages."""
    out, todo = {}, []
    for it in items:
        for j, p in enumerate(it.passages[:limit]):
            if p.relevant is not None:
                out[it.id, p.id] = (p.relevant, "label")
            elif opts.judge_relevance:
                if not it.answers:
                    raise DataError("judging relevance (--judge-relevance) needs the reference "
                                    "answers", path=path, record=it.record, field="answers")
                todo.append((it, p))
            else:
                raise DataError("no relevance label; give one or pass --judge-relevance",
                                path=path, record=it.record, field=f"passages[{j}].{p.label_field}")
    if todo:
        judged = steps.judge_relevance(
            llm.get(), [(it.question, it.answers, p.text) for it, p in todo],
            sampling=replace(steps.GREEDY, max_tokens=opts.judge_max_tokens),
            attempts=opts.attempts)
        for (it, p), verdict in zip(todo, judged, strict=True):
            out[it.id, p.id] = verdict
    return out


def _given_model(items: list[UdcgItem], path, opts: UdcgOptions) -> str:
    models = given_models(items)
    if opts.given_model is not None:
        if opts.given_model not in models:
            raise DataError(f"no passage has models_info[{opts.given_model!r}].no_res_prob "
                            f"(models in the file: {', '.join(models) or 'none'})", path=path,
                            field="models_info")
        return opts.given_model
    if len(models) != 1:
        raise DataError(f"--utility given needs --given-model: the file has "
                        f"{len(models)} models ({', '.join(models) or 'none'})", path=path,
                        field="models_info")
    return models[0]


# A context: its item, its index among the item's contexts and its passages' indices.
Context = tuple[UdcgItem, int, list[int]]


def _contexts(items: list[UdcgItem], opts: UdcgOptions, relevance, *,
              protocol: bool) -> tuple[list[Context], dict | None]:
    """Each item's passage list as it is, or the protocol's samples from its top passages
    (with what the sampler did)."""
    if not protocol:
        return [(it, 0, list(range(len(it.passages)))) for it in items], None
    contexts: list[Context] = []
    sampler = Counter()
    for it in items:
        labels = [relevance[it.id, p.id][0] for p in it.passages[:opts.depth]]
        rng = random.Random(f"udcg:{opts.seed}:{it.id}")
        drawn, what = sample_contexts(labels, n_contexts=opts.contexts_per_question,
                                      size=opts.context_size, depth=opts.depth, rng=rng)
        if not drawn:
            sampler["questions_skipped_too_few_passages"] += 1
            continue
        sampler["questions"] += 1
        sampler["unbalanced_questions"] += not what["balanced"]
        sampler["duplicate_contexts"] += what["duplicates"]
        contexts += [(it, n, ctx) for n, ctx in enumerate(drawn)]
    return contexts, dict(sampler)


def _abstentions(needed: list[tuple[str, int]], by_id: dict[str, UdcgItem], path,
                 opts: UdcgOptions, llm: LazyRunner,
                 ) -> tuple[dict[tuple[str, int], tuple[float, dict]], str | None]:
    """p(NO-RESPONSE) with its detail for each needed ``(item id, passage index)``, and the
    model it is of."""
    if opts.utility == "given":
        model = _given_model(list(by_id.values()), path, opts)
        estimates = {}
        for iid, j in needed:
            it, p = by_id[iid], by_id[iid].passages[j]
            if model not in p.no_res_prob:
                raise DataError(f"no given p(NO-RESPONSE) for model {model!r}", path=path,
                                record=it.record,
                                field=f"passages[{j}].models_info.{model}.no_res_prob")
            estimates[iid, j] = (p.no_res_prob[model], {})
        return estimates, model
    if not needed:
        return {}, None
    runner = llm.get()
    found = steps.abstention_probabilities(
        runner, [(by_id[i].question, by_id[i].passages[j].text) for i, j in needed],
        mode=opts.utility, logprobs=opts.logprobs, no_response_token=opts.no_response_token,
        samples=opts.samples,
        temperature=opts.temperature, max_tokens=opts.sample_max_tokens)
    return ({key: (est.p_no_response, est.detail) for key, est in zip(needed, found,
                                                                       strict=True)},
            runner.backend.model)


def _grade(contexts: list[Context], context_rows: list[dict], opts: UdcgOptions,
           llm: LazyRunner, judge: LazyRunner) -> list[dict]:
    """The protocol's answers to the contexts, graded; adds ``grade`` (the ideal grade, Sec.
    6.2's rule with ``grading="context-aware"``) and ``grade_value`` to ``context_rows`` and
    returns the rows of ``answers.jsonl``."""
    answers = steps.generate_answers(
        llm.get(), [(it.question, [it.passages[j].text for j in ctx]) for it, _, ctx in contexts],
        max_tokens=opts.max_answer_tokens)
    graded = steps.grade_answers(
        judge.get(), [(it.question, it.answers, a) for (it, _, _), a in zip(contexts, answers,
                                                                        strict=True)],
        sampling=replace(steps.GREEDY, max_tokens=opts.judge_max_tokens),
        attempts=opts.attempts)
    answer_rows = []
    for row, answer, (grade, source, judge_out) in zip(context_rows, answers, graded,
                                                       strict=True):
        row["grade"] = ideal_grade(grade, row["relevant"], opts.grading)
        row["grade_value"] = IDEAL_VALUE[row["grade"]]
        answer_rows.append({"item_id": row["item_id"], "context": row["context"],
                            "passages": row["passages"], "relevant": row["relevant"],
                            "answer": answer, "judge_grade": grade, "grade": row["grade"],
                            "grade_source": source, "judge_output": judge_out})
    return answer_rows


def _score(items: list[UdcgItem], path, opts: UdcgOptions, llm: LazyRunner,
           judge: LazyRunner, *, protocol: bool, theta: ThetaWeights | None) -> _Scored:
    pool = opts.depth if protocol else None
    if protocol:  # checked before any LLM call
        missing = [it for it in items if not it.answers]
        if missing:
            raise DataError("the protocol grades answers against the reference answers",
                            path=path, record=missing[0].record, field="answers")
    relevance = _relevance(items, path, opts, judge, pool)
    info: dict = {"items": len(items),
                  "relevance": dict(Counter(src for _, src in relevance.values()))}
    contexts, sampler = _contexts(items, opts, relevance, protocol=protocol)
    if sampler is not None:
        info["sampler"] = sampler

    # Utilities of the passages that occur in a context.
    needed = list(dict.fromkeys((it.id, j) for it, _, ctx in contexts for j in ctx))
    by_id = {it.id: it for it in items}
    estimates, info["model"] = _abstentions(needed, by_id, path, opts, llm)
    passage_rows, utility = [], {}
    for iid, j in needed:
        it, p = by_id[iid], by_id[iid].passages[j]
        rel, source = relevance[iid, p.id]
        prob, detail = estimates[iid, j]
        utility[iid, j] = passage_utility(rel, prob)
        passage_rows.append({"item_id": iid, "passage_id": p.id, "rank": j + 1,
                             "relevant": rel, "relevance_source": source,
                             "p_no_response": prob, "utility": utility[iid, j],
                             "utility_source": opts.utility, **detail})

    # Per context: UDCG, UDCG_theta and the IR metrics.
    cid = [f"{it.id}\t{n}" for it, n, _ in contexts]
    runs = {c: [it.passages[j].id for j in ctx] for c, (it, _, ctx) in zip(cid, contexts,
                                                                            strict=True)}
    qrels_of = {it.id: {p.id: int(relevance[it.id, p.id][0]) for p in it.passages[:pool]}
                for it in items}
    ir = ir_metrics(runs, {c: qrels_of[it.id] for c, (it, _, _) in zip(cid, contexts,
                                                                        strict=True)})
    context_rows = []
    theta_skipped = 0
    for c, (it, n, ctx) in zip(cid, contexts, strict=True):
        us = [utility[it.id, j] for j in ctx]
        row = {"item_id": it.id, "context": n, "k": len(ctx), "passages": runs[c],
               "relevant": sum(relevance[it.id, it.passages[j].id][0] for j in ctx),
               "utilities": us, "UDCG": udcg(us, opts.gamma)}
        if theta is not None:
            if len(us) == theta.k:
                row["UDCG_theta"] = udcg_theta(us, theta)
            else:
                row["UDCG_theta"] = math.nan
                theta_skipped += 1
        released = it.released.get(info["model"]) if not protocol else None
        if released is not None:   # the authors' own score of the same list, to compare
            row["UDCG_released"] = released
        row.update(ir[c])
        context_rows.append(row)
    if theta is not None:
        info["theta_skipped_contexts"] = theta_skipped

    answer_rows = []
    if protocol and contexts:
        answer_rows = _grade(contexts, context_rows, opts, llm, judge)
        info["grades"] = dict(Counter(r["grade"] for r in answer_rows))
        info["grade_sources"] = dict(Counter(r["grade_source"] for r in answer_rows))
    return _Scored(passage_rows, context_rows, answer_rows, info)


def _released_check(rows: list[dict]) -> dict | None:
    """How far our UDCG is from the scores the input carries (the authors' release)."""
    pairs = [(r["UDCG"], r["UDCG_released"]) for r in rows if "UDCG_released" in r]
    if not pairs:
        return None
    return {"items": len(pairs),
            "max_abs_difference": max(abs(a - b) for a, b in pairs)}


def _utility_record(opts: UdcgOptions, model: str | None) -> dict:
    """Which p(NO-RESPONSE) a result used, recorded with it."""
    if opts.utility == "first-token":
        return {"mode": "first-token", "prompt": AUTHORS_UTILITY.id,
                "system_message": True, "token": opts.no_response_token,
                "logprobs": opts.logprobs}
    if opts.utility == "logprobs":
        return {"mode": "logprobs", "what": "summed mass of the first tokens that begin "
                "NO-RESPONSE", "prompt": ANSWER.id, "logprobs": opts.logprobs}
    if opts.utility == "sampling":
        return {"mode": "sampling", "prompt": ANSWER.id, "samples": opts.samples,
                "temperature": opts.temperature}
    return {"mode": "given", "model": model}     # the models_info key read


def _metric_names(theta) -> list[str]:
    return ["UDCG", *(["UDCG_theta"] if theta is not None else []), *IR_NAMES]


def _write_contexts(path, rows: list[dict], metrics: list[str], protocol: bool) -> None:
    cols = ["item_id", "context", "k", "passages", "relevant", *metrics,
            *(["UDCG_released"] if any("UDCG_released" in r for r in rows) else []),
            *(["grade"] if protocol else [])]
    import pandas as pd

    frame = pd.DataFrame(rows, columns=cols)
    frame["passages"] = frame["passages"].map(",".join)
    write_tsv(path, frame, float_format=None)   # full precision: a reproduction is checkable


def run_udcg(input_path, output_dir, options: UdcgOptions | None = None, *,
             runner: LLMRunner | Callable[[], LLMRunner] | None = None,
             judge_runner: LLMRunner | Callable[[], LLMRunner] | None = None,
             theta: ThetaWeights | str | Path | None = None,
             fit_theta: str | Path | None = None) -> dict:
    """Score ``input_path`` and write ``passages.jsonl``, ``contexts.tsv`` and
    ``summary.json`` (with the protocol also ``answers.jsonl`` and ``correlation.tsv``; with
    ``fit_theta`` also ``theta.json``) to ``output_dir``; return the summary.

    ``runner``: an :class:`LLMRunner` (the caller closes it) or a function that builds one,
    called only when an LLM is needed (the runner is then closed here). ``judge_runner``: the
    same for the relevance judge and the answer grader (default: ``runner``, as the paper uses
    separate judges, Claude 3.7 Sonnet and Gemini 2.0 Flash, this can differ). ``theta``: UDCG_theta
    weights (or a JSON file of them); ``fit_theta``: a training file in the same format, on
    which the protocol is run and UDCG_theta fitted (Sec. 7.2) before scoring the input.
    """
    opts = options or UdcgOptions()
    opts.check()
    if theta is not None and fit_theta is not None:
        raise ValueError("give either theta weights or a training file to fit them, not both")
    output_dir = Path(output_dir)
    items = read_items(input_path)  # validate before any LLM call
    train_items = read_items(fit_theta) if fit_theta is not None else None
    if isinstance(theta, str | Path):
        theta = load_theta(theta)
    llm = LazyRunner(runner, needed_for="UDCG's utilities, judgments or protocol")
    judge = llm if judge_runner is None else LazyRunner(
        judge_runner, needed_for="the relevance judge and the answer grader")
    try:
        summary: dict = {"input": str(input_path), "options": asdict(opts)}
        if train_items is not None:
            trained = _score(train_items, fit_theta, opts, llm, judge, protocol=True,
                             theta=None)
            examples = [(r["item_id"], r["utilities"], r["grade_value"])
                        for r in trained.contexts]
            try:
                theta = fit_udcg_theta(examples, c=opts.theta_c, seed=opts.seed)
            except ValueError as e:
                raise DataError(f"cannot fit UDCG_theta: {e}", path=fit_theta) from None
            theta.info["trained_on"] = str(fit_theta)
            save_theta(output_dir / "theta.json", theta)
            summary["theta_training"] = {**trained.info, "contexts": len(trained.contexts)}
        scored = _score(items, input_path, opts, llm, judge, protocol=opts.protocol,
                        theta=theta)
        metrics = _metric_names(theta)
        summary.update(scored.info)
        p_no = [(r["relevant"], r["p_no_response"]) for r in scored.passages]
        summary.update({"passages": len(scored.passages), "contexts": len(scored.contexts),
                        "gamma": opts.gamma, "utility": opts.utility,
                        "utility_estimate": _utility_record(opts, summary.get("model")),
                        "means": {m: mean_of_defined(r.get(m) for r in scored.contexts)
                                  for m in metrics},
                        "p_no_response_mean": {
                            "relevant": mean_of_defined(p for rel, p in p_no if rel),
                            "irrelevant": mean_of_defined(p for rel, p in p_no if not rel)}})
        released = _released_check(scored.contexts)
        if released is not None:
            summary["released_udcg"] = {"model": summary["model"], **released}
        if theta is not None:
            summary["theta"] = theta.to_json()
        write_jsonl(output_dir / "passages.jsonl", scored.passages)
        _write_contexts(output_dir / "contexts.tsv", scored.contexts, metrics, opts.protocol)
        if opts.protocol:
            corr, questions = correlations(scored.contexts, metrics)
            summary["correlation"] = corr
            summary["correlation_questions"] = questions
            summary["grading"] = opts.grading
            write_jsonl(output_dir / "answers.jsonl", scored.answers)
            import pandas as pd

            write_tsv(output_dir / "correlation.tsv", pd.DataFrame(
                [{"metric": m, **c} for m, c in corr.items()],
                columns=["metric", "spearman", "questions", "spearman_where_defined",
                         "questions_where_defined"]), float_format=None)
        for key, lazy in (("llm", llm), ("judge_llm", judge)):
            if key == "judge_llm" and judge is llm:
                continue
            used = lazy.used
            summary[key] = None if used is None else {"model": used.backend.model,
                                                      **used.stats.to_json()}
        write_json(output_dir / "summary.json", summary)
        return summary
    finally:
        llm.close()
        if judge is not llm:
            judge.close()

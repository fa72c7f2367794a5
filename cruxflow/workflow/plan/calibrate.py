"""``cruxflow plan --calibrate``: measure the configured backends instead of trusting a table
(docs/plan.md, "Calibrating").

For every stage of the plan with requests the cache does not answer, a short batch is sent to
the stage's backend through cruxflow's LLM layer, without the cache (calibration requests must
really run, and must not answer a later run's requests): the stage's own first requests,
exactly as its jobs will send them, where the plan built them from real inputs; else requests
of the stage's shape (its mean prompt tokens, its estimated output as ``max_tokens``). Each
batch is timed; prompt and output tokens are counted by the plan's own counter (so that the
rates are in the units the plan counts), and one prefill rate and one generation rate per
backend are fitted to all its batches by non-negative least squares: seconds = prompt tokens /
prefill rate + output tokens / generation rate.

A llama.cpp backend runs in this process on the CPU: its batches are timed by the process's CPU
time (divided by its threads), the time they take on cores of their own, so that a machine
busy with other work (as the shared build machines are) does not make the model look slower
than it is; the run's jobs are compared by their benchmark files' ``cpu_time`` likewise. A
server or a GPU engine is timed by the wall clock.

What the batches show beyond speed goes back into the plan (:class:`Observed`): how long the
model's outputs run (a small model may write up to ``max_tokens`` where the plan assumed a
rewrite of the piece's length), and the passages each decontextualization sent gave (which size
the ratings before the passages exist: the pieces sent are rated as they came out, the others
at their mean per piece), and the sub-questions each topic asked got (likewise); hence at least
:data:`SIZING_REQUESTS` of those stages' requests are sent, whatever ``n``. And
what every job pays before its first request, its start-up (a Python process with the job's
imports, the model loaded and warmed up), is measured once per backend.
"""

from __future__ import annotations

import math
import resource
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass

from cruxflow.llm import Request, Sampling, make_backend
from cruxflow.workflow.plan.base import (
    QUESTION_WORDS,
    SAMPLE,
    Counter,
    Observed,
    Plan,
    prefix_tokens,
    template_tokens,
)
from cruxflow.workflow.plan.rates import InstanceRate
from cruxflow.workflow.plan.sizes import FILLER

ASK = "\n\nRewrite the text above in your own words, at full length:\n"
PROBE = "(probe)"
# The stages whose outputs size the ratings (the largest stage: every passage against every
# sub-question of its topic), and the requests of theirs sent when calibrating, at least (all,
# where fewer): the pieces and topics sent are rated in the plan as they came out.
SIZING = ("passages", "subquestions")
SIZING_REQUESTS = SAMPLE
# What a job imports before its first request (a Snakemake script job of an LLM stage).
JOB_IMPORTS = "import snakemake.script, cruxflow.workflow.job, cruxflow.stages.ratings, " \
              "cruxflow.llm"


@dataclass
class Batch:
    stage: str
    backend: str
    requests: int
    prompt_tokens: int
    output_tokens: int
    seconds: float
    real: bool = False             # the stage's own requests, not stand-ins of its shape
    reused_tokens: int = 0         # of prompt_tokens, those the plan counts as reused


@dataclass
class Calibration:
    rates: dict[str, InstanceRate]
    batches: list[Batch]
    observed: Observed


def stage_prompt(counter: Counter, tokens: int, salt: int) -> str:
    """Plain prose of about ``tokens`` counted tokens, ending with a request to write; each
    ``salt`` starts elsewhere in the text, so that no two prompts share a prefix that a
    prompt cache could reuse."""
    per_word = counter.per_word([" ".join(FILLER)])
    n = max(1, round((tokens - counter.one(ASK)) / per_word))
    words = [FILLER[(salt * 7 + i) % len(FILLER)] for i in range(n)]
    return f"[{salt}] " + " ".join(words) + ASK


class Clock:
    """Seconds of work: the process's CPU time per thread for a backend in this process on the
    CPU (llama.cpp), else the wall clock."""

    def __init__(self, cpu_threads: int | None):
        self.threads = cpu_threads

    def now(self) -> float:
        if self.threads:
            return time.process_time() / self.threads
        return time.perf_counter()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_start_seconds(cpu: bool) -> float:
    """Seconds of a fresh Python process importing what an LLM job imports: its CPU time, or
    the wall clock (``cpu`` False)."""
    start, cpu_start = time.perf_counter(), _children_cpu()
    try:
        subprocess.run([sys.executable, "-c", JOB_IMPORTS], check=True, capture_output=True)
    except subprocess.CalledProcessError:       # no Snakemake here (a core install)
        subprocess.run([sys.executable, "-c", "import cruxflow.llm"], capture_output=True)
    return (_children_cpu() - cpu_start) if cpu else (time.perf_counter() - start)


def _rating_stand_ins(s, config: dict, counter: Counter, n: int, salt: int
                      ) -> tuple[list[Request], int]:
    """Rating requests as a rating stage sends them where a prompt cache reuses prefixes: the
    stage's own template, one stand-in passage of the row's mean size asked ``n`` questions in
    a row (passage first); and the prompt tokens the plan counts as reused among them."""
    from cruxflow.stages.ratings import rating_prompt

    template = rating_prompt(config["llm"]["ratings"]["layout"])
    fixed = template_tokens(counter, template)
    question_tokens = round(QUESTION_WORDS * counter.per_word([" ".join(FILLER)]))
    passage = max(1, round(s.prompt_tokens / s.requests) - fixed - question_tokens)
    context = stage_prompt(counter, passage, salt).removesuffix(ASK)
    questions = [" ".join(FILLER[(salt + 3 * i) % len(FILLER):][:QUESTION_WORDS]) + "?"
                 for i in range(n)]
    sampling = Sampling(temperature=0.0, max_tokens=1)
    requests = [Request(template.render(question=q, context=context), sampling)
                for q in questions]
    shared = prefix_tokens(counter, template) + counter.one(context)
    return requests, shared * (n - 1)


def sample_size(stage: str, n: int) -> int:
    """Requests of ``stage`` to time: ``n``; of a stage whose outputs size the ratings at
    least :data:`SIZING_REQUESTS`. A small model's outputs spread widely: 1, 7, 2, 1 and 2
    passages for the five pieces of ``cruxflow init --example``; 6, 2 and 1 of the 10
    sub-questions asked for the demo's three topics."""
    return max(n, SIZING_REQUESTS) if stage in SIZING else n


def _requests(s, counter: Counter, n: int, salt: int, config: dict
              ) -> tuple[list[Request], bool, int]:
    """The stage's own first requests where the plan built them, else stand-ins of its shape:
    rating-shaped ones where a prompt cache reuses their prefixes. Also the prompt tokens the
    plan counts as reused among them."""
    if s.sample and not s.reused_prompt_tokens:
        k = min(sample_size(s.stage, n), len(s.sample))   # spread over the stage's sample
        picks = sorted({round(j * (len(s.sample) - 1) / max(1, k - 1)) for j in range(k)})
        return [s.sample[i] for i in picks], True, 0
    if s.reused_prompt_tokens and s.stage in ("ratings", "judge_holes", "rag_judge"):
        requests, reused = _rating_stand_ins(s, config, counter, n, salt)
        return requests, False, reused
    prompt_tokens = max(1, round(s.prompt_tokens / s.requests))
    output_tokens = max(1, math.ceil(s.output_tokens / s.requests))
    return [Request(stage_prompt(counter, prompt_tokens, salt + i),
                    Sampling(temperature=0.7, top_p=0.95, seed=0, max_tokens=output_tokens))
            for i in range(n)], False, 0


def parser_of(stage: str, llm: dict, prompt: str):
    """The stage's own parser of an output of ``prompt`` (``None``: a stage without one here):
    what the passages, report request and sub-question stages keep."""
    from cruxflow.llm.parsing import PASSAGE_TEXT, REPORT_REQUEST_TEXT, SUBQUESTION_TEXT
    from cruxflow.llm.retry import Checked
    from cruxflow.stages import passages, questions

    if stage == "passages":
        min_words = llm["passages"]["min_passage_words"]
        return passages.passage_parser(Checked(PASSAGE_TEXT.with_min_words(min_words)))
    if stage == "report_requests":
        return questions.report_request_parser(prompt, Checked(REPORT_REQUEST_TEXT))
    if stage == "subquestions":
        return questions.subquestion_parser(prompt, Checked(SUBQUESTION_TEXT))
    return None


def _as_the_stage_asks(backend, requests: list[Request], stage: str, llm: dict
                       ) -> tuple[list[Request], list, list, int]:
    """Each request sent as the stage sends it: asked again (the stage's next seeds) while its
    parser refuses the output, up to ``llm.attempts``. Returns every request sent, its output,
    per request the parsed value of its last output (``None``: refused every time), and how many
    first outputs the parser refused."""
    from cruxflow.llm.retry import retry_sampling

    sent, outputs, values, refused = [], [], [], 0
    for r in requests:
        parse = parser_of(stage, llm, r.prompt)
        value = None
        for attempt in range(1, llm["attempts"] + 1):
            sampling = retry_sampling(r.sampling, attempt)
            if sampling is None or (attempt > 1 and parse is None):
                break
            request = Request(r.prompt, sampling, system=r.system)
            out = next(iter(backend.generate_iter([request])))[1]
            sent.append(request)
            outputs.append(out)
            value = parse(out.text) if parse else out.text
            refused += attempt == 1 and value is None
            if value is not None:
                break
        values.append(value)
    return sent, outputs, values, refused


def measure(plan: Plan, config: dict, counter: Counter, *, n: int = 3
            ) -> tuple[list[Batch], dict[str, float], dict, dict[str, tuple[int, int, int]]]:
    """Time ``n`` requests of every stage that has uncached requests (:func:`sample_size`), on
    its backend (each backend built once); a stage's own requests are asked again as the stage
    does. Returns the batches, each backend's start-up seconds, per stage of :data:`SIZING` and
    prompt sent the items its output was parsed into (``None``: refused every time), and per
    stage (first requests, requests sent, first outputs refused)."""
    llm = config["llm"]
    by_backend = defaultdict(list)
    for s in plan.stages:
        if s.requests and (s.cached is None or s.cached < s.requests):
            by_backend[s.backend].append(s)
    batches, startup, again = [], {}, {}
    parsed: dict[str, dict] = {stage: {} for stage in SIZING}
    salt = 0
    for name, stages in by_backend.items():
        on_cpu = llm["backends"][name]["kind"] == "llamacpp"
        clock = Clock(llm["threads"] if on_cpu else None)
        process = process_start_seconds(on_cpu)
        start = clock.now()
        backend = make_backend(llm["backends"][name], threads=llm["threads"])
        try:
            # one throw-away request: the first call pays for loading and warming up
            list(backend.generate_iter([Request(stage_prompt(counter, 16, -1),
                                                Sampling(max_tokens=1))]))
            startup[name] = process + clock.now() - start
            # two probes that tell prefill from generation whatever stages are left to time,
            # and one of many short requests for what each request costs beside its tokens
            for probe in ([Request(stage_prompt(counter, 600, -2 - i), Sampling(max_tokens=1))
                           for i in range(2)],
                          [Request(stage_prompt(counter, 24, -4),
                                   Sampling(temperature=0.7, seed=0, max_tokens=160))],
                          [Request(f"[{i}] " + stage_prompt(counter, 8, -5 - i),
                                   Sampling(max_tokens=1)) for i in range(8)]):
                start = clock.now()
                outputs = [out for _, out in backend.generate_iter(probe)]
                batches.append(Batch(PROBE, name, len(probe),
                                     sum(counter.many(r.prompt for r in probe)),
                                     sum(counter.many(o.text for o in outputs)),
                                     clock.now() - start))
            for s in stages:
                requests, real, reused = _requests(s, counter, n, salt, config)
                salt += len(requests)
                start = clock.now()
                if real:
                    sent, outputs, values, refused = _as_the_stage_asks(backend, requests,
                                                                        s.stage, llm)
                    again[s.stage] = (len(requests), len(sent), refused)
                    if s.stage in parsed:
                        parsed[s.stage].update(zip((r.prompt for r in requests), values,
                                                   strict=True))
                else:
                    sent = requests
                    outputs = [out for _, out in backend.generate_iter(requests)]
                took = clock.now() - start
                batches.append(Batch(s.stage, name, len(sent),
                                     sum(counter.many(r.prompt for r in sent)),
                                     sum(counter.many(o.text for o in outputs)), took, real,
                                     reused))
        finally:
            backend.close()
    return batches, startup, parsed, again


def fit(batches: list[Batch], startup: dict[str, float] | None = None
        ) -> dict[str, InstanceRate]:
    """Per backend, a prefill rate (prompt tokens computed, those the plan counts as reused
    left out), a generation rate and what each request costs beside its tokens, fitted to its
    batches."""
    import numpy as np
    from scipy.optimize import nnls

    startup = startup or {}
    rates = {}
    for name in dict.fromkeys(b.backend for b in batches):
        mine = [b for b in batches if b.backend == name]
        a = np.array([[b.requests, b.prompt_tokens - b.reused_tokens, b.output_tokens]
                      for b in mine], dtype=float)
        t = np.array([b.seconds for b in mine])
        (per_request, per_prompt, per_output), _ = nnls(a, t)
        # A coefficient at 0 (too few shapes to tell them apart): charge all time to the other.
        if per_prompt <= 0:
            per_prompt = 1e-9
        if per_output <= 0:
            per_output = 1e-9
        rates[name] = InstanceRate(
            1 / per_prompt, 1 / per_output, 1,
            f"measured: {sum(b.requests for b in mine)} requests in {len(mine)} stage-shaped "
            f"batches, {sum(b.seconds for b in mine):.1f} s; {startup.get(name, 0):.1f} s to "
            f"start each job, {per_request:.2f} s a request", startup.get(name, 0.0),
            per_request)
    return rates


def observed(batches: list[Batch], pieces: dict[str, list[str] | None],
             again: dict[str, tuple[int, int, int]], counter: Counter,
             max_passages: int | None = None,
             questions: dict[str, list[str] | None] | None = None) -> Observed:
    """Mean output tokens per request of each calibrated stage; the passages of each piece
    decontextualized, their mean per piece (the first ``max_passages``; a piece refused every
    time keeps its own text as one) and a kept passage's mean tokens; the sub-questions of each
    topic asked (the plan keeps a dataset's first ``n_questions``); and the requests one first
    request cost where the stage asked again."""
    out: dict[str, list[int]] = defaultdict(list)
    for b in batches:
        if b.stage != PROBE:
            out[b.stage] += [b.output_tokens, b.requests]
    means = {stage: sum(v[0::2]) / max(1, sum(v[1::2])) for stage, v in out.items()}
    asked = {stage: (sent / first, refused / first)
             for stage, (first, sent, refused) in again.items() if sent > first}
    per_piece = [len(v[:max_passages]) if v else 1 for v in pieces.values()]
    kept_tokens = counter.many(p for v in pieces.values() if v for p in v[:max_passages])
    return Observed(means, sum(per_piece) / len(per_piece) if per_piece else None, asked,
                    sum(kept_tokens) / len(kept_tokens) if kept_tokens else None, pieces,
                    questions or {})


def calibrate(plan: Plan, config: dict, counter: Counter, *, n: int = 3) -> Calibration | None:
    """The measured rates, batches and observations; ``None`` when the cache answers every
    request of the plan (nothing left to time)."""
    batches, startup, parsed, again = measure(plan, config, counter, n=n)
    if not batches:
        return None
    rates = fit(batches, startup)
    # A measured instance uses the GPUs its backend entry names (llama.cpp: the CPU).
    for name, rate in rates.items():
        spec = config["llm"]["backends"][name]
        tp = 0 if spec["kind"] == "llamacpp" else int(spec.get("gpus") or 1)
        rates[name] = InstanceRate(rate.prompt_tokens_per_s, rate.output_tokens_per_s, tp,
                                   rate.source, rate.startup_s, rate.request_s)
    return Calibration(rates, batches, observed(batches, parsed["passages"], again, counter,
                                                config["llm"]["passages"]["max_passages"],
                                                parsed["subquestions"]))

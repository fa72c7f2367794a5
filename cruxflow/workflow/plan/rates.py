"""Throughput of one model instance by model size and GPU kind, each figure with its source, and
how many instances a number of GPUs holds (docs/plan.md, "Rates").

One figure is measured: an 8B model on one H100 (MLPerf). Every other row is derived from it
by two rules, printed with the row:

* across model sizes, per-GPU throughput scales with 1 / parameters (prefill and decoding both
  cost ~2 x parameters FLOPs per token; decoding at large batch reads the weights once per
  step for the whole batch, so it too tracks parameters);
* across GPU kinds, prefill scales with dense BF16 TFLOP/s and decoding with HBM bandwidth,
  both from the vendors' data sheets. This assumes the same software efficiency on every GPU,
  which flatters GPUs whose vLLM support is younger (ROCm in 2024).

A backend whose entry says ``gpus: N`` is one model instance tensor-parallel over N GPUs; its
rate is N times the per-GPU rate (linear: optimistic, tensor parallelism loses some to
communication). ``--gpus`` is the number of GPUs available: instances = available // N.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The anchor: Llama-3.1-8B (FP8) with vLLM 0.10 on one H100, MLPerf Inference v5.1 offline,
# Red Hat's submission (their post "Efficient and reproducible LLM inference: Red Hat MLPerf
# Inference v5.1 results"): 5,777 generated tokens/s. MLPerf's llama3.1-8b workload is
# summarization with long prompts, so prefill is inside this figure; FP8 is about twice BF16's
# speed where compute bound, so as a BF16 decoding rate it errs fast, as a pure decoding rate
# slow: we take it as is.
ANCHOR_PARAMS_B = 8.0
ANCHOR_OUTPUT = 5777.0
ANCHOR_OUTPUT_SOURCE = ("MLPerf Inference v5.1 offline, Llama-3.1-8B FP8, vLLM 0.10, one H100 "
                        "(Red Hat's submission)")
# Prefill is an assumption, not a measurement: ~2 x 8e9 FLOPs per token against an H100's
# ~989 dense BF16 TFLOP/s at about half utilisation gives ~31,000 tokens/s.
ANCHOR_PROMPT = 30000.0
ANCHOR_PROMPT_SOURCE = "assumed: 2 x 8e9 FLOPs/token at ~50% of an H100's 989 BF16 TFLOP/s"


# llama.cpp runs on the CPU here (the xllamacpp wheel): no GPU row applies. The anchor is our
# own measurement, `cruxflow plan --calibrate` on the demo config (SmolLM2-135M-Instruct Q4_1,
# 1 thread of the 2-core build machine, 2026-11-24, load average 8-10 from other work): 96
# prompt and 69 generated tokens/s. Other GGUF models scale with 1 / parameters, threads
# linearly (both optimistic); calibrate for anything that matters.
CPU_ANCHOR_PARAMS_B = 0.135
CPU_PROMPT = 96.0
CPU_OUTPUT = 69.0
CPU_SOURCE = ("measured: SmolLM2-135M Q4_1 with llama.cpp, 1 thread of the 2-core build "
              "machine (cruxflow plan --calibrate, 2026-11-24)")


@dataclass(frozen=True)
class GPU:
    name: str
    bf16_tflops: float     # dense, no sparsity
    hbm_tb_s: float
    memory_gb: float
    source: str


# Vendor data sheets (dense BF16 tensor TFLOP/s, HBM bandwidth, memory).
GPUS = {
    "h100": GPU("NVIDIA H100 SXM", 989, 3.35, 80, "NVIDIA H100 data sheet"),
    "h200": GPU("NVIDIA H200 SXM", 989, 4.8, 141, "NVIDIA H200 data sheet"),
    "a100": GPU("NVIDIA A100 SXM 80GB", 312, 2.0, 80, "NVIDIA A100 data sheet"),
    "l40s": GPU("NVIDIA L40S", 362, 0.864, 48, "NVIDIA L40S data sheet"),
    # One MI250X package holds two dies (GCDs) that ROCm and vLLM see as two GPUs each.
    "mi250x": GPU("AMD MI250X (one package, 2 GCDs)", 383, 3.2, 128,
                  "AMD Instinct MI250X data sheet"),
    "mi250x-gcd": GPU("AMD MI250X, one GCD (what ROCm counts as a GPU)", 191.5, 1.6, 64,
                      "AMD Instinct MI250X data sheet, halved"),
    "mi210": GPU("AMD MI210", 181, 1.6, 64, "AMD Instinct MI210 data sheet"),
    "mi300x": GPU("AMD MI300X", 1307, 5.3, 192, "AMD Instinct MI300X data sheet"),
}


@dataclass(frozen=True)
class InstanceRate:
    """Tokens per second of one model instance, and where the figures come from.
    ``gpus_per_instance`` 0: on the CPU, one instance whatever the GPUs. ``startup_s``: what
    each job pays before its first request (a process, its imports, the model loaded), known
    only where measured (``--calibrate``); 0 otherwise, and the plan says so."""

    prompt_tokens_per_s: float
    output_tokens_per_s: float
    gpus_per_instance: int
    source: str
    startup_s: float = 0.0
    request_s: float = 0.0        # what each request costs beside its tokens (measured)

    def __post_init__(self):
        if self.prompt_tokens_per_s <= 0 or self.output_tokens_per_s <= 0:
            raise ValueError("throughputs must be positive")


def model_params_b(model: str) -> float | None:
    """Billions of parameters from a model id ("Llama-3.1-70B-Instruct" -> 70,
    "SmolLM2-135M" -> 0.135); ``None`` when the name does not say."""
    found = re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([bBmM])(?![a-zA-Z])",
                       re.sub(r"[-_/]", " ", model))
    if not found:
        return None
    number, unit = found[-1]
    return float(number) / (1000 if unit in "mM" else 1)


def per_gpu(params_b: float, gpu_kind: str) -> tuple[float, float, str]:
    """(prompt, output) tokens/s of one GPU of ``gpu_kind`` serving a ``params_b`` model, and
    the derivation."""
    gpu, h100 = GPUS[gpu_kind], GPUS["h100"]
    size = ANCHOR_PARAMS_B / params_b
    prompt = ANCHOR_PROMPT * size * gpu.bf16_tflops / h100.bf16_tflops
    output = ANCHOR_OUTPUT * size * gpu.hbm_tb_s / h100.hbm_tb_s
    how = (f"{ANCHOR_OUTPUT_SOURCE}; prefill {ANCHOR_PROMPT_SOURCE}; x {size:.3g} for "
           f"{params_b:g}B parameters")
    if gpu_kind != "h100":
        how += (f"; x {gpu.bf16_tflops:g}/{h100.bf16_tflops:g} TFLOP/s (prefill) and "
                f"x {gpu.hbm_tb_s:g}/{h100.hbm_tb_s:g} TB/s (decoding), {gpu.source}")
    return prompt, output, how


def rate_table(gpu_kinds=None, sizes=(8, 70)) -> list[dict]:
    """The table docs/plan.md prints: per (model size, GPU kind), per-GPU rates and sources."""
    rows = []
    for size in sizes:
        for kind in gpu_kinds or GPUS:
            prompt, output, how = per_gpu(size, kind)
            rows.append({"model_b": size, "gpu": kind, "prompt_tokens_per_s": prompt,
                         "output_tokens_per_s": output, "source": how})
    return rows


def instances(available: int, per_instance: int, backend: str) -> int:
    """Model instances that ``available`` GPUs hold; one line of error when not even one."""
    if per_instance == 0:
        return 1
    if available < per_instance:
        raise ValueError(f"backend {backend!r} is one model instance over {per_instance} GPUs "
                         f"(its 'gpus'), but --gpus is {available}")
    return available // per_instance


def table_rate(spec: dict, gpu_kind: str, *, threads: int = 1) -> InstanceRate:
    """The table's rate of one instance of an ``llm.backends`` entry on ``gpu_kind`` (a
    llama.cpp backend: on the CPU with ``threads`` threads)."""
    if gpu_kind not in GPUS:
        raise ValueError(f"unknown GPU kind {gpu_kind!r} (known: {', '.join(GPUS)})")
    params = model_params_b(str(spec.get("model", "")))
    if spec.get("kind") == "llamacpp":
        params = params or CPU_ANCHOR_PARAMS_B
        scale = CPU_ANCHOR_PARAMS_B / params * threads
        return InstanceRate(CPU_PROMPT * scale, CPU_OUTPUT * scale, 0,
                            f"{CPU_SOURCE}; x {CPU_ANCHOR_PARAMS_B / params:.3g} for "
                            f"{params:g}B parameters, x {threads} thread(s); on the CPU: "
                            "--calibrate measures yours")
    note = ""
    if params is None:
        params, note = ANCHOR_PARAMS_B, (f"; model size not in the name {spec.get('model')!r}: "
                                         "taken as 8B")
    tp = int(spec.get("gpus") or 1)
    prompt, output, how = per_gpu(params, gpu_kind)
    return InstanceRate(prompt * tp, output * tp, tp,
                        f"{how}; x {tp} GPUs per instance (tensor parallel){note}")

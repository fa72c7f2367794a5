"""vLLM in process, for GPU nodes: batched offline generation, tensor parallelism, greedy
judgments with logprobs and choices constrained by ``structured_outputs``.

vLLM lives in its own environment (``envs/vllm.yaml``); nothing else imports it.
"""

from __future__ import annotations

import logging

from cruxflow.llm.base import Backend, Completion, LLMError, Request, chat_messages
from cruxflow.llm.openai_format import merge_logprob

log = logging.getLogger(__name__)


class VLLMBackend(Backend):
    kind = "vllm"

    def __init__(self, model: str, *, endpoint: str = "chat", tensor_parallel_size: int = 1,
                 max_model_len: int | None = None, gpu_memory_utilization: float = 0.9,
                 dtype: str = "auto", seed: int = 0, max_logprobs: int = 20,
                 prompt_cache: bool | None = None, engine_args: dict | None = None):
        super().__init__(model, endpoint=endpoint)
        try:
            import vllm
        except ImportError as e:
            raise LLMError("the vllm backend needs vLLM (use the envs/vllm.yaml environment)") \
                from e
        self._vllm = vllm
        engine_args = dict(engine_args or {})
        if prompt_cache is not None:  # unset: vLLM's own default (on since its V1 engine)
            engine_args.setdefault("enable_prefix_caching", bool(prompt_cache))
        self.llm = vllm.LLM(model=model, tensor_parallel_size=tensor_parallel_size,
                            max_model_len=max_model_len,
                            gpu_memory_utilization=gpu_memory_utilization, dtype=dtype,
                            seed=seed, max_logprobs=max_logprobs, **engine_args)
        log.info("vLLM: loaded %s on %d GPU(s)", model, tensor_parallel_size)

    def sampling_params(self, request: Request):
        s = request.sampling
        kwargs = dict(temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens,
                      seed=s.seed, logprobs=s.logprobs or None, stop=list(s.stop) or None)
        if s.choices:
            # The old guided_* keys are silently ignored since vLLM 0.12.
            from vllm.sampling_params import StructuredOutputsParams

            kwargs["structured_outputs"] = StructuredOutputsParams(choice=list(s.choices))
        return self._vllm.SamplingParams(**kwargs)

    def generate(self, requests: list[Request]) -> list[Completion]:
        params = [self.sampling_params(r) for r in requests]
        if self.endpoint == "chat":
            outputs = self.llm.chat([chat_messages(r) for r in requests], params,
                                    use_tqdm=False)
        else:
            outputs = self.llm.generate([r.text for r in requests], params, use_tqdm=False)
        return [_completion(o) for o in outputs]


def _completion(request_output) -> Completion:
    out = request_output.outputs[0]
    top = None
    if out.logprobs:
        top = {}
        for lp in out.logprobs[0].values():
            merge_logprob(top, lp.decoded_token or "", lp.logprob)
    return Completion(text=out.text, finish_reason=out.finish_reason, top_logprobs=top,
                      prompt_tokens=len(request_output.prompt_token_ids or []),
                      completion_tokens=len(out.token_ids),
                      cached_tokens=getattr(request_output, "num_cached_tokens", None))

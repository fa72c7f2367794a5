"""LLMRole (cruxflow/workflow/llm_role.py): what a job on each kind of llm backend asks for."""

from types import SimpleNamespace

from cruxflow.workflow.llm_role import LLM_ENV, VLLM_ENV, LLMRole

LLM = {"threads": 6, "backend": "cpu",
       "backends": {"cpu": {"kind": "llamacpp", "model": "m.gguf"},
                    "gpu": {"kind": "vllm", "model": "m", "gpus": 4, "mem_mb": 128000,
                            "runtime": 2880},
                    "gpu1": {"kind": "vllm", "model": "m"},
                    "api": {"kind": "openai", "model": "m", "mem_mb": 1000}}}


def role_of(wc):
    return wc.backend


def job(backend):
    return SimpleNamespace(backend=backend)


def test_llamacpp_runs_on_the_configured_cpu_threads():
    role = LLMRole(LLM, role_of)
    assert role.threads(job("cpu")) == 6
    assert role.gpus(job("cpu")) == 0
    assert role.env(job("cpu")) == LLM_ENV == "../envs/llm.yaml"
    assert (role.mem_mb(job("cpu")), role.runtime(job("cpu"))) == (4000, 720)


def test_vllm_asks_for_its_gpus_in_its_own_environment():
    role = LLMRole(LLM, role_of)
    assert role.threads(job("gpu")) == 1
    assert role.gpus(job("gpu")) == 4 and role.gpus(job("gpu1")) == 1
    assert role.env(job("gpu")) == VLLM_ENV == "../envs/vllm.yaml"
    assert (role.mem_mb(job("gpu")), role.runtime(job("gpu"))) == (128000, 2880)


def test_a_server_costs_one_thread_and_no_gpu():
    role = LLMRole(LLM, role_of)
    assert (role.threads(job("api")), role.gpus(job("api"))) == (1, 0)
    assert role.env(job("api")) == LLM_ENV and role.mem_mb(job("api")) == 1000


def test_the_backend_is_chosen_per_job():
    role = LLMRole(LLM, lambda wc: "gpu" if wc.dataset == "big" else "cpu")
    assert role.gpus(SimpleNamespace(dataset="big")) == 4
    assert role.gpus(SimpleNamespace(dataset="small")) == 0
    assert role.spec(SimpleNamespace(dataset="small"))["model"] == "m.gguf"


def test_resources_and_params_as_the_rules_unpack_them():
    role = LLMRole(LLM, role_of)
    resources = role.resources
    assert set(resources) == {"gpu", "mem_mb", "runtime"}
    assert [resources[k](job("gpu")) for k in ("gpu", "mem_mb", "runtime")] == [4, 128000, 2880]
    assert role.params["llm"] is LLM and role.params["backend"](job("api")) == "api"

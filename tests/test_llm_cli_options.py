"""The LLM options shared by ``cruxflow udcg``, ``support`` and ``kpr``."""

import argparse

import pytest
import yaml

from cruxflow.cli.llm_options import add_llm_arguments, runner_from_args
from cruxflow.llm import LLMError
from cruxflow.weights import DEFAULT_GGUF


def parse(*argv):
    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    return parser.parse_args(list(argv))


def test_base_url_gives_an_openai_backend_and_the_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-test")   # a variable named on purpose must be set
    args = parse("--base-url", "http://127.0.0.1:9/v1", "--model", "llama-70b",
                 "--api-key-env", "MY_KEY")
    runner = runner_from_args(args, default_cache=tmp_path / "out" / "llm_cache.sqlite")
    try:
        assert runner.backend.identity() == {"kind": "openai", "model": "llama-70b",
                                             "endpoint": "chat"}
        assert runner.cache is not None
        assert (tmp_path / "out" / "llm_cache.sqlite").exists()
    finally:
        runner.close()


def test_config_picks_its_backend_and_cache(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"llm": {
        "cache": str(tmp_path / "shared.sqlite"), "backend": "local",
        "backends": {"local": {"kind": "llamacpp", "model": DEFAULT_GGUF},
                     "judge": {"kind": "openai", "model": "j", "batch_size": 7,
                               "base_url": "http://127.0.0.1:9/v1"}}}}))
    runner = runner_from_args(parse("--config", str(config), "--backend", "judge"),
                              default_cache=tmp_path / "unused.sqlite")
    try:
        assert runner.backend.model == "j" and runner.batch_size == 7
        assert (tmp_path / "shared.sqlite").exists()
        assert not (tmp_path / "unused.sqlite").exists()
    finally:
        runner.close()
    with pytest.raises(LLMError, match=r"config.yaml: no LLM backend 'nope'.*judge, local"):
        runner_from_args(parse("--config", str(config), "--backend", "nope"), default_cache=None)


@pytest.mark.parametrize("argv, message", [
    (("--backend", "x"), "--backend needs --config"),
    (("--base-url", "http://h/v1"), "--base-url needs --model"),
    (("--config", "c.yaml", "--model", "m"), "either --config or --model"),
])
def test_contradictory_options_are_refused(argv, message):
    with pytest.raises(LLMError, match=message):
        runner_from_args(parse(*argv), default_cache=None)


def test_default_is_the_packaged_model_in_process(tmp_path):
    runner = runner_from_args(parse("--threads", "1"), default_cache=None)
    try:
        assert runner.backend.identity()["kind"] == "llamacpp"
        assert runner.backend.model == DEFAULT_GGUF and runner.cache is None
    finally:
        runner.close()


def test_server_options_reach_the_backend_and_override_the_config(tmp_path):
    args = parse("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", "5",
                 "--max-retries", "1", "--constrain", "llamacpp", "--model-revision", "q4-v2")
    runner = runner_from_args(args, default_cache=None)
    backend = runner.backend
    assert (backend.timeout_s, backend.max_retries, backend.constrain) == (5.0, 1, "llamacpp")
    assert backend.client.timeout == 5.0 and backend.client.max_retries == 0  # ours, logged
    assert backend.identity()["model_revision"] == "q4-v2"
    runner.close()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"llm": {"backend": "srv", "backends": {"srv": {
        "kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "timeout_s": 600,
        "max_retries": 8, "constrain": "vllm"}}}}))
    runner = runner_from_args(parse("--config", str(config), "--timeout", "7"),
                              default_cache=None)
    # the command line wins where given; the config's values stay where not
    assert (runner.backend.timeout_s, runner.backend.max_retries,
            runner.backend.constrain) == (7.0, 8, "vllm")
    runner.close()


@pytest.mark.parametrize("argv", [("--timeout", "5"), ("--max-retries", "2"),
                                  ("--constrain", "vllm")])
def test_server_options_on_a_model_in_process_are_refused(argv):
    flag = argv[0]
    with pytest.raises(LLMError, match=f"{flag} applies to an OpenAI-compatible server .*"
                                       "not to a llamacpp backend"):
        runner_from_args(parse("--model", "x.gguf", *argv), default_cache=None)


@pytest.mark.parametrize("argv, message", [
    (("--timeout", "0"), "argument --timeout: must be more than 0, got 0.0"),
    (("--timeout", "nan"), "argument --timeout: must be a finite number, got 'nan'"),
    (("--max-retries", "-1"), "argument --max-retries: must be at least 0, got -1"),
    (("--constrain", "grammar"), "argument --constrain: invalid choice: 'grammar'"),
])
def test_bad_server_option_values(argv, message, capsys):
    with pytest.raises(SystemExit):
        parse(*argv)
    assert message in capsys.readouterr().err

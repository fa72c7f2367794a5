"""One vocabulary for the command line (cruxflow/cli/vocabulary/): every flag of every command
comes from it, means one thing, has a help that shows its default, and the workflow's config
calls the same option by the same name."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import re

import pytest

from cruxflow.cli import COMMANDS, build_parser, main
from cruxflow.cli import vocabulary as V


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


COMMAND_PARSERS = _commands()


def _options(parser):
    """(action) for every option of a command but -h."""
    return [a for a in parser._actions if a.option_strings and a.dest != "help"]


def _uses() -> list[tuple[str, argparse.Action]]:
    return [(name, a) for name, p in COMMAND_PARSERS.items() for a in _options(p)
            if not isinstance(a, V.Refused)]


def test_every_command_is_there_and_has_a_help_line_and_a_description():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == [c.replace("_", "-") for c in COMMANDS]
    helps = {a.dest: a.help for a in sub._choices_actions}
    for name, p in COMMAND_PARSERS.items():
        assert helps.get(name), f"cruxflow {name} has no help line in `cruxflow --help`"
        assert p.description and len(p.description) > 40, f"cruxflow {name}: no description"


def test_the_top_level_help_is_the_full_parsers_without_importing_numpy(monkeypatch):
    """``cruxflow --help`` lists the commands from cruxflow.cli.commands.COMMANDS alone (issue
    41: no command module, no numpy imported), and shows what the parser of every command shows."""
    import subprocess
    import sys

    monkeypatch.setenv("COLUMNS", "80")      # one width for both (argparse reads it)
    code = ("import sys\nfrom cruxflow.cli import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\nprint('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    shown, imported = out.rsplit("\n", 2)[0] + "\n", out.rsplit("\n", 2)[1]
    assert imported == "False"
    assert shown == build_parser().format_help()


def test_every_flag_of_every_command_comes_from_the_vocabulary():
    """A flag added by hand (parser.add_argument) could give its name a second meaning: each
    must be added with vocabulary.add, which marks it."""
    for command, action in _uses():
        flag = V.flag_of(action)
        assert flag is not None, (
            f"cruxflow {command}: {action.option_strings[0]} is not from the vocabulary: declare "
            "it in cruxflow/cli/vocabulary/declared.py and add it with vocabulary.add")
        assert action.option_strings == flag.option_strings, (command, flag.name)
        assert action.dest == (flag.dest or flag.name.replace("-", "_")), (command, flag.name)


def test_one_name_one_meaning_one_grammar():
    """Each name is declared once; every command that has it parses it with the declared
    grammar (or its declared one-value form) and starts its help with the declared meaning."""
    seen: dict[str, set] = {}
    for command, action in _uses():
        flag = V.flag_of(action)
        expected = flag.single_type if action.single and flag.single_type else flag.type
        assert action.type is expected, (command, flag.name, action.type, expected)
        meaning = flag.single if action.single and flag.single else flag.meaning
        assert action.help.replace("%%", "%").startswith(meaning), (command, flag.name)
        if flag.is_switch and not action.keep_unset:   # off unless given
            assert action.default is (flag.action == "store_false"), (command, flag.name)
        seen.setdefault(flag.option, set()).add(flag.meaning)
    assert all(len(meanings) == 1 for meanings in seen.values())
    # no flag's other spelling is a flag of its own
    names = {f.option for f in V.VOCABULARY.values()}
    assert not names & {s for f in V.VOCABULARY.values() for s in f.option_strings[1:]}


def test_every_declared_flag_is_used():
    used = {V.flag_of(a).name for _, a in _uses()}
    assert set(V.VOCABULARY) - used == set()


def _shown_default(action) -> str | None:
    m = re.search(V.DEFAULT_RE, action.help.replace("%%", "%"))
    return m.group("value") if m else None


# Where the help's default is a description rather than the value itself, and why.
DESCRIBED_DEFAULTS = {"--workflow": "the checkout's own folder, a path that differs per machine"}


def test_every_flag_has_a_help_that_shows_its_default():
    for command, action in _uses():
        option = action.option_strings[0]
        assert action.help and len(action.help) > 10, f"cruxflow {command} {option}: no help"
        if action.required or action.nargs == 0:   # switches: off unless given
            continue
        shown = _shown_default(action)
        assert shown is not None, f"cruxflow {command} {option}: the help shows no default"
        default = action.default
        if default is None:
            continue                        # a description of what happens without it
        text = V.show(default)
        if option in DESCRIBED_DEFAULTS:
            continue
        assert text in shown, f"cruxflow {command} {option}: help says {shown!r}, parser {text!r}"


def test_the_help_defaults_are_the_parsers_when_formatted():
    """What argparse prints (its %-formatting included) shows each flag's default."""
    for command, p in COMMAND_PARSERS.items():
        text = " ".join(p.format_help().split())
        for action in _options(p):
            shown = None if isinstance(action, V.Refused) else _shown_default(action)
            if shown is not None:
                assert " ".join(shown.split()) in text, (command, action.option_strings)


def test_unset_defaults_show_the_vocabularys():
    """annotate leaves the options that define its database unset (to tell a resumed one from a
    changed one), ingest its options of reading (to refuse one the format does not read), and
    each shows the default they then get: the vocabulary's, or its home's (below)."""
    unset = 0
    for command, action in _uses():
        if getattr(action, "keep_unset", False):
            flag = V.flag_of(action)
            assert action.default is None
            unset += 1
            if not flag.is_switch and flag.home is None and flag.default is not None:
                assert _shown_default(action) == V.show(flag.default), (command, flag.name)
    assert unset >= 20


def _home_defaults(home: str):
    """The object holding a method's defaults: an options class (instantiated) or an instance
    (a policy object)."""
    module, _, name = home.rpartition(".")
    holder = getattr(importlib.import_module(module), name)
    return holder() if isinstance(holder, type) else holder


def test_a_methods_defaults_are_its_options_class():
    """A flag whose default a method fixes (``home``) gets it from there in every command."""
    checked = 0
    for command, action in _uses():
        flag = V.flag_of(action)
        if flag.home is None or not flag.home[0].islower() or "." not in flag.home:
            continue
        home = flag.home
        if home.endswith("CONSTRAINTS"):
            module, _, name = home.rpartition(".")
            assert tuple(action.choices) == getattr(importlib.import_module(module), name)
            continue
        options = _home_defaults(home)
        value = getattr(options, action.dest)
        if action.keep_unset and action.default is None:   # not given: the home's holds
            if flag.is_switch:
                assert value is False, (command, flag.name)
            elif value is not None:                         # else described in words
                assert _shown_default(action) == V.show(value), (command, flag.name)
        else:
            assert action.default == value, (command, flag.name)
        checked += 1
    assert checked >= 25
    # the per-method flags of several commands take each method's own
    for name, command, home in (
            ("attempts", "udcg", "cruxflow.beyond.udcg.UdcgOptions"),
            ("attempts", "support", "cruxflow.beyond.support.SupportOptions"),
            ("attempts", "kpr", "cruxflow.beyond.kpr.KprOptions"),
            ("temperature", "udcg", "cruxflow.beyond.udcg.UdcgOptions"),
            ("temperature", "support", "cruxflow.beyond.support.SupportOptions")):
        action = COMMAND_PARSERS[command]._option_string_actions[f"--{name}"]
        assert action.default == getattr(_home_defaults(home), name)
        assert _shown_default(action) == V.show(action.default)


def test_a_command_cannot_give_a_flag_another_grammar_or_default():
    p = argparse.ArgumentParser()
    with pytest.raises(ValueError, match="default is the vocabulary's"):
        V.add(p, "eta", default=4)
    with pytest.raises(ValueError, match="choices and const are the vocabulary's"):
        V.add(p, "endpoint", choices=("x",))
    with pytest.raises(ValueError, match="declared twice"):
        V.register(V.Flag("eta", "another meaning"))
    with pytest.raises(TypeError):
        V.add(p, "eta", type=int)   # no such knob


# --- the same option has the same name in the workflow's config ---------------------------------

def _schema():
    from cruxflow.workflow.config import config_schema

    return config_schema()


# (flag, the config key that holds the same option). Checked: the key exists; where both have a
# default, they are equal; a config value the command line would be given parses there.
CONFIG_NAMES = [
    ("--eta", "metrics.eta"),
    ("--alpha", "metrics.alpha"),
    ("--density-weight", "metrics.density_weight"),
    ("--relevance-grades", "metrics.relevance_grades"),
    ("--tokenizer", "metrics.tokenizer"),
    ("--k", "metrics.context_sizes"),
    ("--k", "rag.context_sizes"),
    ("--attempts", "llm.attempts"),
    ("--bootstrap", "rag.bootstrap"),
    ("--test", "rag.significance.test"),
    ("--correction", "rag.significance.correction"),
    ("--resamples", "rag.significance.resamples"),
    ("--seed", "rag.significance.seed"),
    ("--n-questions", "datasets.*.n_questions"),
    ("--input", "datasets.*.input"),
    ("--prefix", "datasets.*.prefix"),
    ("--min-docs", "datasets.*.min_docs"),
    ("--distractors", "datasets.*.distractors"),
    ("--collection", "datasets.*.collection"),
    ("--judge-merge", "datasets.*.judge_merge"),
    ("--number-like", "datasets.*.number_like"),
    ("--max-topics", "datasets.*.max_topics"),
    # how a backend is called: the LLM options override the config's backend by these keys
    ("--base-url", "llm.backends.*.base_url"),
    ("--api-key-env", "llm.backends.*.api_key_env"),
    ("--endpoint", "llm.backends.*.endpoint"),
    ("--model-revision", "llm.backends.*.model_revision"),
    ("--timeout", "llm.backends.*.timeout_s"),
    ("--deadline", "llm.backends.*.deadline_s"),
    ("--max-retries", "llm.backends.*.max_retries"),
    ("--constrain", "llm.backends.*.constrain"),
    ("--prompt-cache", "llm.backends.*.prompt_cache"),
]


def _config_key_name(flag) -> set[str]:
    """The names the config may give a flag's option: the flag's, with ``_s`` where the value
    is in seconds (``--deadline``: ``deadline_s``)."""
    name = flag.name.replace("-", "_")
    return {name, "context_sizes"} | ({f"{name}_s"} if flag.metavar == "SECONDS" else set())


def _config_property(path: str) -> dict:
    node = _schema()
    for part in path.split("."):
        node = node["additionalProperties"] if part == "*" else node["properties"][part]
    return node


@pytest.mark.parametrize(("option", "key"), CONFIG_NAMES)
def test_config_keys_name_the_same_option_as_the_flags(option, key):
    flag = V.VOCABULARY[option.removeprefix("--")]
    prop = _config_property(key)
    assert key.rsplit(".", 1)[1] in _config_key_name(flag), key
    if flag.home is None and flag.default is not None and "default" in prop:
        assert prop["default"] == flag.default, (option, key)
    if flag.type is not None and "default" in prop and prop["default"] is not None:
        value = prop["default"]
        if isinstance(value, list):   # a list flag: a word per value
            assert [x for v in value for x in flag.type(str(v))] == value, (option, key)
        else:
            assert flag.type(str(value)) == value, (option, key)


def test_the_llm_options_override_the_keys_named_here():
    """The keys --timeout, --deadline, ... set on a config's backend (llm_options.SERVER_OPTIONS)
    are the config names of those flags above, and each is a key of a backend in the schema."""
    from cruxflow.cli.llm_options import SERVER_OPTIONS

    names = dict(CONFIG_NAMES)
    for option, key in SERVER_OPTIONS.items():
        assert names["--" + option.replace("_", "-")] == f"llm.backends.*.{key}", option


def test_a_base_url_is_refused_by_the_flag_and_the_config_alike():
    """One rule (openai_compat.check_base_url) at both doors: --base-url and --judge-base-url,
    and the config check of a served backend's base_url."""
    from cruxflow.workflow.config import _llm_problems

    for url, ok in (("http://127.0.0.1:8000/v1", True), ("https://api.example.org/v1", True),
                    ("ftp://host/v1", False), ("127.0.0.1:8000", False), ("http://", False),
                    ("http://host:99999/v1", False)):
        for flag in ("base-url", "judge-base-url"):
            try:
                V.VOCABULARY[flag].type(url)
                flag_ok = True
            except argparse.ArgumentTypeError:
                flag_ok = False
            assert flag_ok is ok, (flag, url)
        config = {"llm": {"backends": {"srv": {"kind": "openai", "model": "m",
                                                "base_url": url}}}}
        found = [key for key, _ in _llm_problems(config)]
        assert found == ([] if ok else ["llm.backends.srv.base_url"]), url


@pytest.mark.parametrize("metric", ["udcg", "support", "kpr"])
def test_every_key_of_a_beyond_job_is_its_commands_flag(metric):
    """A job of the workflow's beyond section says what `cruxflow <metric>` says, by the same
    names: each key is the dest of one of its flags, and the options class's fields too."""
    job = _schema()["definitions"][f"{metric}_job"]["properties"]
    dests = {a.dest for a in _options(COMMAND_PARSERS[metric])}
    assert set(job) - dests == set(), f"config keys of {metric} that are no flag of it"
    home = {"udcg": "cruxflow.beyond.udcg.UdcgOptions",
            "support": "cruxflow.beyond.support.SupportOptions",
            "kpr": "cruxflow.beyond.kpr.KprOptions"}[metric]
    fields = {f.name for f in dataclasses.fields(_home_defaults(home))}
    assert fields <= dests
    # a workflow job scores: kpr's --extract-only (key points, no scores) is the CLI's only
    assert fields - set(job) == ({"extract_only"} if metric == "kpr" else set())


def test_old_beyond_keys_are_read_with_a_warning():
    from cruxflow.workflow.config import rename_old_keys, with_defaults

    lines = []
    config = {"datasets": {"mn": {"format": "multinews", "input": "mn.jsonl"}}, "beyond": {
        "udcg": {"u": {"input": "u.json", "judge_attempts": 2}},
        "support": {"s": {"input": "a.jsonl", "judge": "all"}},
        "kpr": {"k": {"input": "k.jsonl"}}}}
    rename_old_keys(config, lines.append)
    with_defaults(config)
    assert config["beyond"]["udcg"]["u"]["questions"] == "u.json"
    assert config["beyond"]["udcg"]["u"]["attempts"] == 2
    assert config["beyond"]["support"]["s"]["judge_pairs"] == "all"
    assert config["beyond"]["kpr"]["k"]["questions"] == "k.jsonl"
    assert len(lines) == 5
    assert lines[0] == ("cruxflow: warning: beyond.udcg.u.input is now beyond.udcg.u.questions "
                        "(the flag --questions)")


# --- old spellings --------------------------------------------------------------------------------

def test_every_renamed_flag_is_refused_or_still_read():
    for (command, old), renamed in V.RENAMED.items():
        parser = COMMAND_PARSERS[command]
        action = parser._option_string_actions[old]
        if V.is_refused(old):
            assert isinstance(action, V.Refused)
            assert renamed.new in action.message
            assert V.VOCABULARY[old.removeprefix("--")].short, old   # says what it is now
        else:
            assert action is parser._option_string_actions[renamed.new]
            assert old not in action.option_strings      # hidden from --help
            assert old not in parser.format_help()


def test_a_refused_old_name_says_the_new_one_in_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["ppi", "--judge-values", "j.tsv", "--human-values", "h.tsv", "--alpha", "0.05"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err.startswith("cruxflow ppi: error: --alpha is now --confidence")
    assert "--confidence 0.95 for the old --alpha 0.05" in err
    with pytest.raises(SystemExit):
        main(["support", "--input", "a.jsonl", "--output", "out"])
    err = capsys.readouterr().err
    assert "--input is now --answers; in every command, --input is the raw corpus" in err


def test_a_deprecated_old_name_works_with_one_warning(capsys):
    parser = build_parser("meta_eval")
    args = parser.parse_args(["meta-eval", "--judge", "j", "--human", "h", "--runs", "a.run",
                              "b.run"])
    assert [str(r) for r in args.run] == ["a.run", "b.run"]
    err = capsys.readouterr().err
    assert err == "cruxflow meta-eval: warning: --runs is deprecated: use --run\n"
    args = build_parser("evaluate").parse_args(["evaluate", "--dataset", "d", "--run", "r",
                                                "--name", "mine"])
    assert args.run_name == "mine"
    assert "--name is deprecated: use --run-name" in capsys.readouterr().err


def test_json_is_a_switch_everywhere(capsys):
    for command, action in _uses():
        if action.option_strings[0] == "--json":
            assert action.nargs == 0, command
    with pytest.raises(SystemExit) as e:
        main(["plan", "--json", "plan.json"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--json is a switch and takes no value, got 'plan.json'" in err
    assert "--output DIR" in err


def test_k_has_one_grammar(capsys):
    """``--k K [K ...]`` in every command that has it: the same type and action, values
    separated by spaces; crux-eval and judge cut at a rank and refuse oracle and all with one
    line; meta-eval's old --k is refused."""
    from cruxflow.cli.args import ContextSizes, context_sizes

    assert context_sizes("oracle") == ["oracle"] and context_sizes("all") == ["all"]
    uses = [(command, a) for command, a in _uses() if a.option_strings[0] == "--k"]
    assert {command for command, _ in uses} == {"evaluate", "crux-eval", "judge"}
    for command, action in uses:
        assert isinstance(action, ContextSizes), command
        assert (action.type, action.nargs) == (context_sizes, "+"), command
        assert action.help.startswith("context sizes k, separated by spaces"), command
    for command, argv in (("evaluate", ["--dataset", "d", "--run", "r"]),
                          ("crux_eval", ["--run", "r", "--qrel", "q", "--judge", "j"]),
                          ("judge", ["--run", "r", "--dataset", "d", "--output", "o"])):
        args = build_parser(command).parse_args([command.replace("_", "-"), *argv,
                                                 "--k", "10", "20"])
        assert args.k == [10, 20], command
        assert capsys.readouterr().err == ""
    argv = ["crux-eval", "--run", "r", "--qrel", "q", "--judge", "j", "--k", "10", "oracle"]
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and "\n" not in err
    assert err.startswith("cruxflow crux-eval: error: argument --k: 'oracle' is a context size "
                          "of evaluate; crux-eval takes positive integers")
    # meta-eval's old --k (its Cov@k and alpha_nDCG_crux@k) is a --measure now: refused
    with pytest.raises(SystemExit):
        build_parser("meta_eval").parse_args(["meta-eval", "--judge", "j", "--human", "h",
                                              "--k", "10"])
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--k is now --measure" in err


# Every list flag, a command that has it, the rest of a valid command line, and the values
# as the command receives them.
LIST_FLAGS = [
    ("--k", "evaluate", ["--dataset", "d", "--run", "r"], ["oracle", "10"], ["oracle", 10]),
    ("--annotators", "annotate", ["--dataset", "d"], ["ann1", "ann2"], ["ann1", "ann2"]),
    ("--group-by", "kpr", ["--questions", "q", "--output", "o"], ["domain", "type"],
     ("domain", "type")),
]


@pytest.mark.parametrize(("flag", "command", "argv", "words", "values"), LIST_FLAGS)
def test_list_flags_take_spaces_and_read_commas_with_a_deprecation(capsys, flag, command,
                                                                   argv, words, values):
    parser = build_parser(command)
    args = parser.parse_args([command, *argv, flag, *words])
    assert getattr(args, flag[2:].replace("-", "_")) == values
    assert capsys.readouterr().err == ""
    args = parser.parse_args([command, *argv, flag, ",".join(words)])   # the old form
    assert getattr(args, flag[2:].replace("-", "_")) == values
    assert capsys.readouterr().err == (f"cruxflow {command}: warning: commas between values are "
                                       f"deprecated: write {flag} {' '.join(words)}\n")


def test_every_list_flag_is_spaced():
    """No flag of any command is a list written with commas: a flag's metavar or meaning that
    says so, or a type that splits on commas without the deprecation action."""
    from cruxflow.cli.args import ListFlag

    for command, action in _uses():
        flag = V.flag_of(action)
        assert "comma-separated" not in flag.meaning, (command, flag.name)
        metavars = action.metavar if isinstance(action.metavar, tuple) else [action.metavar]
        assert not any("," in (m or "") for m in metavars), (command, flag.name)
        if isinstance(action, ListFlag):
            assert action.nargs == "+", (command, flag.name)
    assert {f for f, *_ in LIST_FLAGS} == {
        a.option_strings[0] for _, a in _uses() if isinstance(a, ListFlag)}


# --- the docs show the flags as they are --------------------------------------------------------

def _doc_invocations():
    """(file, command, flags) of every `cruxflow COMMAND ...` in a code block of README.md and
    docs/*.md, with its continuation lines (a trailing backslash, or a usage block's indented
    `[--flag ...]` lines)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        lines = path.read_text().splitlines()
        in_code = False
        for i, line in enumerate(lines):
            if line.lstrip().startswith("```"):
                in_code = not in_code
                continue
            m = re.match(r"^\s*(?:\$ )?cruxflow ([a-z-]+)\b(.*)$", line)
            if not in_code or not m:
                continue
            text, j = m.group(2), i
            while (text.rstrip().endswith("\\") or (j + 1 < len(lines)
                   and re.match(r"^\s+[\[(]?--", lines[j + 1]))) and j + 1 < len(lines):
                j += 1
                text = text.rstrip().rstrip("\\") + " " + lines[j]
            text = text.split(" #")[0]
            yield path.name, m.group(1), set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9_-]*)", text))


def test_the_docs_show_each_command_with_its_current_flags():
    seen = 0
    for doc, command, flags in _doc_invocations():
        if command not in COMMAND_PARSERS:
            continue
        parser = COMMAND_PARSERS[command]
        for flag in flags - {"--help", "--version"}:
            action = parser._option_string_actions.get(flag)
            assert action is not None, f"{doc}: cruxflow {command} has no {flag}"
            assert not isinstance(action, V.Refused), f"{doc}: {command} {flag} is refused"
            assert flag in action.option_strings, f"{doc}: {command} {flag} is an old spelling"
            seen += 1
    assert seen > 150


def test_the_docs_table_of_renamed_flags_is_the_vocabularys():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    section = text[text.index("## Renamed flags"):]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 4 and cells[0].startswith("`") and cells[0] != "`plan`":
            old, new = (re.match(r"`(--[a-z-]+)", c).group(1) for c in cells[1:3])
            table[(cells[0].strip("`"), old)] = (new, cells[3])
    assert {k: v[0] for k, v in table.items()} == {k: r.new for k, r in V.RENAMED.items()}
    for (_, old), (_, how) in table.items():
        assert how == ("refused" if V.is_refused(old) else "read, with a warning"), old

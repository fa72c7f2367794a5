"""The format registry (cruxflow/data/ingest/formats.py) is the one home of the input formats
and their options: the command's flags, the config schema, the workflow's ingest rule and the
workflow's format defaults must say what it says, in both directions; and the DUC 2004 release
order that ships with it numbers clusters as the CRUX release does."""

import copy
import json
import re
from pathlib import Path

import pytest

from cruxflow.cli import build_parser, main, vocabulary
from cruxflow.cli.ingest import flag, options_from_args
from cruxflow.data.errors import DataError
from cruxflow.data.ingest import formats as registry
from cruxflow.data.ingest import ingest
from cruxflow.data.ingest.formats import FORMATS, IngestOptions, options_from_config
from cruxflow.data.ingest.release_order import duc2004_release_order
from cruxflow.metrics.options import DEFAULTS
from cruxflow.workflow.config import config_schema, resolve, with_defaults

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "cruxflow" / "schemas" / "config.schema.json"
# the dataset keys that are the workflow's own, not options of reading a corpus
WORKFLOW_OWN = {"corpus", "generate", "n_questions", "llm_backend", "evaluate", "human_labels"}


def _schema() -> dict:
    """The config schema as the workflow loads it (the registry's dataset keys filled in)."""
    return copy.deepcopy(config_schema())


def _entry(schema: dict) -> dict:
    return schema["properties"]["datasets"]["additionalProperties"]["properties"]


def _at(schema: dict, dotted: str) -> dict:
    node = schema
    for part in dotted.split("."):
        node = node["properties"][part]
    return node


def _ingest_parser():
    parser = build_parser("ingest")
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices["ingest"]


# --- the schema ---------------------------------------------------------------------------------

def test_the_registry_is_the_one_home_of_the_schemas_dataset_keys():
    """The stored schema leaves the registry's dataset keys out; the loaded one has them as
    the registry says, first and in its order, every workflow format in the enum."""
    stored = _entry(json.loads(SCHEMA.read_text()))
    ours = registry.schema_properties()
    assert not set(stored) & set(ours), "these keys are the format registry's: remove them"
    loaded = _entry(_schema())
    assert list(loaded) == [*ours, *stored]
    assert all(loaded[key] == prop for key, prop in ours.items())
    assert loaded["format"]["enum"] == [f for f in FORMATS if FORMATS[f].workflow]
    assert all(f.name in loaded["format"]["description"] and f.input in
               loaded["input"]["description"] for f in FORMATS.values() if f.workflow)


def test_every_dataset_key_is_an_option_or_the_workflows_own_and_back():
    entry = _entry(_schema())
    options = registry.options()
    in_entry = {n for n, spec in options.items() if spec.workflow is None}
    assert set(entry) - WORKFLOW_OWN == {"format", "input"} | in_entry
    defaults = registry.defaults()
    for name in in_entry:
        assert entry[name]["default"] == defaults[name], name
    # the options that live elsewhere in the config, with the same defaults
    for name, spec in options.items():
        if spec.workflow is not None:
            assert _at(_schema(), spec.workflow)["default"] == defaults[name], name
    # the command's eta is the workflow's metrics.eta, with the same default
    assert registry.COMMAND_FLAGS["eta"].workflow == "metrics.eta"
    assert _at(_schema(), "metrics.eta")["default"] == DEFAULTS.eta


# --- the command's flags ------------------------------------------------------------------------

def test_every_flag_of_ingest_is_the_registrys_and_back():
    parser = _ingest_parser()
    flags = {s for a in parser._actions for s in a.option_strings} - {"-h", "--help"}
    want = {flag(n) for n in registry.options()} | {flag(n) for n in registry.COMMAND_FLAGS}
    assert flags == want
    defaults = registry.defaults()
    for action in parser._actions:
        name = action.dest
        if name not in registry.options():
            continue
        spec = registry.options()[name]
        assert action.default is None            # not given: the option's default holds
        # the registry's help; a flag of other commands too says its one meaning first
        declared = vocabulary.VOCABULARY[flag(name)[2:]]
        described = registry.describe(name, flag)
        help_ = action.help.replace("%%", "%")
        assert help_.startswith(f"{declared.meaning}; here: {described}"
                                if flag(name)[2:] in vocabulary.SHARED_OPTIONS else described)
        if spec.kind == "flag":                  # a switch: off unless given, as every one
            assert action.nargs == 0 and "(default" not in help_
            continue
        shown = re.search(r"\(default: (.*)\)$", help_)[1]
        assert shown == (spec.default_help or str(defaults[name]))
        if spec.kind == "choice":
            assert list(action.choices) == list(spec.choices)
        assert (action.nargs == "+") == (spec.kind == "paths")
    assert parser.description and all(f in parser.description for f in FORMATS)
    fmt = next(a for a in parser._actions if a.dest == "format")
    assert list(fmt.choices) == list(FORMATS)


def _non_default(name: str, spec: registry.Option):
    """A value other than the default, written for the config and for the command line."""
    kind = spec.kind
    if kind == "choice":
        return spec.choices[-1], [spec.choices[-1]]
    if kind == "count":
        return 7, ["7"]
    if kind == "flag":
        return True, []
    if kind == "path":
        return f"{name}.jsonl", [f"{name}.jsonl"]
    if kind == "paths":
        return ["a.jsonl", "b.jsonl"], ["a.jsonl", "b.jsonl"]
    if kind == "encoding":
        return "latin-1", ["latin-1"]
    return "some-prefix", ["some-prefix"]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_the_command_and_the_workflow_build_the_same_options(fmt):
    # every option the format reads, away from its default, given through both doors
    values, argv = {}, []
    config = {"datasets": {"d": {"format": fmt, "input": "x"}},
              "llm": {"passages": {}}}
    for name, spec in registry.options().items():
        if fmt not in spec.formats:
            continue
        value, words = _non_default(name, spec)
        values[name] = value
        argv += [flag(name), *words]
        if spec.workflow is None:
            config["datasets"]["d"][name] = value
        else:
            config["llm"]["passages"][spec.workflow.rsplit(".", 1)[1]] = value
    args = _ingest_parser().parse_args(["--format", fmt, "--input", "x", "--output", "o",
                                        *argv])
    from_cli = options_from_args(args)
    from_workflow = options_from_config(resolve(with_defaults(config)), "d")
    assert from_cli == from_workflow == IngestOptions(**values)


def test_a_flag_the_format_does_not_read_is_refused(tmp_path, capsys):
    rc = main(["ingest", "--format", "multinews", "--input", str(tmp_path / "x.jsonl"),
               "--output", str(tmp_path / "o"), "--summary-length", "200"])
    assert rc == 2
    assert capsys.readouterr().err.strip() == (
        "cruxflow: error: --summary-length does not apply to the multinews format (it applies "
        "to duc2004)")


# --- the workflow ------------------------------------------------------------------------------

def test_the_ingest_rule_passes_the_whole_entry():
    # no option is restated in the rule or its script: both take what the registry builds
    rule = (REPO / "rules" / "ingest.smk").read_text()
    body = rule[rule.index("rule ingest:"):rule.index("rule prepare:")]
    params = body[body.index("params:"):body.index("script:")]
    assert re.findall(r"^\s+(\w+)=", params, re.M) == ["format", "options"]
    script = (REPO / "workflow_scripts" / "ingest.py").read_text()
    assert "IngestOptions(**p.options)" in script
    for name in registry.options():
        assert f"p.{name}" not in script and f"{name}=" not in script


def test_nuggets_and_number_like_reach_the_workflow():
    config = resolve(with_defaults({"datasets": {
        "n": {"format": "nuggets", "input": "nuggets/", "collection": "segments.jsonl"},
        "d": {"format": "duc2004", "input": "duc", "number_like": "p.jsonl",
              "prefix": "duc04-testb"}}}))
    assert config["datasets"]["n"]["generate"] is False            # it comes rated
    assert options_from_config(config, "n").collection == "segments.jsonl"
    assert options_from_config(config, "d").number_like == "p.jsonl"
    assert options_from_config(config, "d").prefix == "duc04-testb"


# --- the DUC 2004 release order ----------------------------------------------------------------

TABLE = duc2004_release_order()


def test_the_release_order_table():
    assert len(TABLE) == 50
    assert all(re.fullmatch(r"d3[01]\d{3}t", name) for name in TABLE)
    assert sorted(TABLE.values()) == list(range(50))      # one to one
    # docs/data-model.md: the release's duc04-testb-0 is what NIST's name order numbers 41
    assert TABLE[sorted(TABLE)[41]] == 0
    # the same table as the one in the project's shared data (shared/ beside the checkout,
    # where there is one), byte for byte
    shared = REPO.parent / "shared" / "data" / "duc2004-release-order.tsv"
    if shared.is_file():
        assert (REPO / "cruxflow" / "data" / "ingest" / "duc2004_release_order.tsv"
                ).read_bytes() == shared.read_bytes()


def _duc_folder(root: Path, names) -> Path:
    """A NIST-layout DUC folder: two documents and one model summary per cluster."""
    for i, name in enumerate(names):
        folder = root / "docs" / name
        folder.mkdir(parents=True)
        for d in range(2):
            docno = f"APW1998{i:04d}.{d:04d}"
            (folder / docno).write_text(
                f"<DOC>\n<DOCNO> {docno} </DOCNO>\n<TEXT>\n   Cluster {name} document {d} "
                "says something.\n</TEXT>\n</DOC>\n")
        (root / "models").mkdir(exist_ok=True)
        key = name[:-1].upper()
        (root / "models" / f"{key}.M.100.T.A").write_text(f"Summary of {name}.\n")
    return root


def test_duc2004_under_duc04_testb_takes_the_release_numbers(tmp_path):
    src = _duc_folder(tmp_path / "duc", sorted(TABLE))
    ds, report = ingest("duc2004", src, IngestOptions(prefix="duc04-testb"))
    assert len(ds.topics) == 50
    for tid, topic in ds.topics.items():
        assert tid == f"duc04-testb-{TABLE[topic.source_id]}"
        assert topic.doc_ids[0] == f"{tid}:0"
    assert list(ds.topics) == [f"duc04-testb-{i}" for i in range(50)]   # the release's order
    assert any("50 clusters numbered as the CRUX release" in n for n in report.notes)
    # another prefix: NIST's name order, as before
    plain, _ = ingest("duc2004", src, IngestOptions(prefix="duc04-test"))
    assert [t.source_id for t in plain.topics.values()] == sorted(TABLE)
    assert list(plain.topics) == [f"duc04-test-{i}" for i in range(50)]
    # the paper preset names that prefix: its DUC dataset gets the release's ids
    import yaml

    paper = yaml.safe_load((REPO / "presets" / "paper.yaml").read_text())
    config = resolve(with_defaults(paper))
    [duc] = [n for n, d in config["datasets"].items() if d["format"] == "duc2004"]
    options = options_from_config(config, duc)
    assert options.prefix == "duc04-testb" and options.number_like is None
    ds, _ = ingest("duc2004", src, options)
    assert {t.topic_id for t in ds.topics.values()} == {
        f"duc04-testb-{TABLE[t.source_id]}" for t in ds.topics.values()}


def test_duc04_testb_refuses_clusters_that_are_not_duc2004s():
    demo = REPO / "resources" / "demo" / "raw" / "duc2004"
    with pytest.raises(DataError, match="10 clusters are not DUC 2004 task 2's "
                                        r"\(d41001t, .*choose another --prefix"):
        ingest("duc2004", demo, IngestOptions(prefix="duc04-testb"))
    ds, _ = ingest("duc2004", demo, IngestOptions(prefix="duc04-testb", id_scheme="source"))
    assert next(iter(ds.topics)) == "duc04-testb-d41001t"   # an explicit scheme wins


def test_docs_ingest_shows_the_registrys_formats_and_options():
    text = (REPO / "docs" / "ingest.md").read_text()
    assert registry.markdown() in text, (
        "docs/ingest.md's tables differ from the format registry: rewrite them with "
        "python -c 'from cruxflow.data.ingest.formats import rewrite_docs; rewrite_docs()'")

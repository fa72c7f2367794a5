"""`cruxflow ingest --format documents --input irds:<id>` on a local ir_datasets collection."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cruxflow.cli import main
from cruxflow.data.model import Dataset

ir_datasets = pytest.importorskip("ir_datasets")

DATA = Path(__file__).resolve().parent / "data" / "irds"
NAME = "cruxflow-test/constitution"


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    from ir_datasets.datasets.base import Dataset as IrdsDataset
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    home = tmp_path_factory.mktemp("irds_home")
    mp = pytest.MonkeyPatch()
    mp.setenv("IR_DATASETS_HOME", str(home))
    # copies: ir_datasets builds its docstore beside the docs file, never in the repository
    local = tmp_path_factory.mktemp("irds_files")
    for name in ("docs.tsv", "queries.tsv", "qrels.txt"):
        shutil.copy(DATA / name, local / name)
    if NAME not in ir_datasets.registry:
        ir_datasets.registry.register(NAME, IrdsDataset(
            TsvDocs(LocalDownload(local / "docs.tsv"), namespace=NAME, lang="en"),
            TsvQueries(LocalDownload(local / "queries.tsv"), namespace=NAME, lang="en"),
            TrecQrels(LocalDownload(local / "qrels.txt"), {0: "not relevant", 1: "relevant",
                                                           2: "highly relevant"})))
    yield NAME
    mp.undo()


def test_relevant_documents_become_a_topic(registered, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["ingest", "--format", "documents", "--input", f"irds:{registered}",
                 "--output", str(out)]) == 0
    ds = Dataset.load(out)
    assert list(ds.topics) == ["q1", "q2"]   # q3 has no relevant document
    q1 = ds.topics["q1"]
    assert q1.query == "Who may serve in the House of Representatives and the Senate?"
    assert q1.questions == [] and q1.reference is None
    # the relevant documents in qrels order; office-1 (relevance 0) is not one
    assert [ds.documents[d].source_id for d in q1.doc_ids] == ["house-1", "house-2", "senate-1"]
    docs = dict(line.split("\t", 1) for line in (DATA / "docs.tsv").read_text().splitlines())
    assert ds.documents[q1.doc_ids[2]].text == docs["senate-1"]
    assert [ds.documents[d].source_id for d in ds.topics["q2"].doc_ids] == \
        ["office-2", "office-1"]
    assert "clusters_skipped        1" in capsys.readouterr().out


def test_unknown_dataset_is_one_error(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["ingest", "--format", "documents", "--input", "irds:no-such/dataset",
                 "--output", str(out)]) == 2
    assert "irds:no-such/dataset: ir_datasets has no such dataset" in capsys.readouterr().err
    assert not out.exists()

"""cruxflow ppi: prediction-powered inference of a mean (cruxflow.paper.ppi, through ppi_py)."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from cruxflow.cli import main
from cruxflow.data.errors import DataError
from cruxflow.paper.ppi import ppi_files, ppi_interval, ppi_mean, read_item_values

pytest.importorskip("ppi_py")


def _write(path, rows):
    path.write_text("".join(f"{k}\t{v}\n" for k, v in rows))
    return path


JUDGE = {"t1": 0.8, "t2": 0.6, "t3": 0.4, "t4": 0.9, "t5": 0.5, "t6": 0.7}
HUMAN = {"t1": 0.6, "t2": 0.5, "t3": 0.2}


def test_classic_ppi_by_hand():
    """estimate = mean of the judge on the unlabelled items + mean of (human - judge) on the
    labelled ones; half-width z * sqrt(var_unlabelled / N + var_rectifier / n), population
    variances (ddof 0), as Angelopoulos et al. write it."""
    res = ppi_mean(JUDGE, HUMAN, alpha=0.05)
    unl = np.array([0.9, 0.5, 0.7])              # t4..t6
    rect = np.array([0.6 - 0.8, 0.5 - 0.6, 0.2 - 0.4])
    est = unl.mean() + rect.mean()              # 0.7 - 0.1666.. = 0.5333..
    half = stats.norm.ppf(0.975) * math.sqrt(unl.var() / 3 + rect.var() / 3)
    assert res.estimate == pytest.approx(0.7 - 0.5 / 3)
    assert res.estimate == pytest.approx(est)
    assert (res.ci_low, res.ci_high) == pytest.approx((est - half, est + half))
    assert res.judge_only == pytest.approx(sum(JUDGE.values()) / 6)
    assert res.human_only == pytest.approx(1.3 / 3)
    h_half = stats.norm.ppf(0.975) * np.std([0.6, 0.5, 0.2]) / math.sqrt(3)
    assert (res.human_ci_low, res.human_ci_high) == pytest.approx((1.3 / 3 - h_half,
                                                                  1.3 / 3 + h_half))
    assert (res.n_labeled, res.n_total, res.lam) == (3, 6, 1.0)


def test_ppi_plus_plus_never_wider_than_classic_here_and_centred():
    classic = ppi_mean(JUDGE, HUMAN, method="ppi")
    tuned = ppi_mean(JUDGE, HUMAN, method="ppi++")
    assert 0 <= tuned.lam <= 1
    assert tuned.ci_high - tuned.ci_low <= classic.ci_high - classic.ci_low + 1e-12
    assert (tuned.ci_low + tuned.ci_high) / 2 == pytest.approx(tuned.estimate)


def _simulate(method: str, draws: int = 1000, n: int = 100, big_n: int = 1000):
    """A judge biased by +0.1 with noise; the truth is the population mean 0.5."""
    rng = np.random.default_rng(29)
    covered = judge_covered = 0
    widths, human_widths = [], []
    z = stats.norm.ppf(0.975)
    for _ in range(draws):
        y = rng.normal(0.5, 0.2, n + big_n)
        yhat = y + 0.1 + rng.normal(0, 0.1, n + big_n)
        est, low, high, _ = ppi_interval(y[:n], yhat[:n], yhat[n:], alpha=0.05, method=method)
        covered += low <= 0.5 <= high
        widths.append(high - low)
        human_widths.append(2 * z * y[:n].std() / math.sqrt(n))
        j_half = z * yhat.std() / math.sqrt(n + big_n)   # the judge-only mean's own CLT interval
        judge_covered += abs(yhat.mean() - 0.5) <= j_half
    return covered / draws, judge_covered / draws, np.mean(widths), np.mean(human_widths)


@pytest.mark.parametrize("method", ["ppi", "ppi++"])
def test_nominal_95_intervals_cover_the_truth_and_the_judge_alone_does_not(method):
    cover, judge_cover, width, human_width = _simulate(method)
    assert 0.93 <= cover <= 0.97
    assert judge_cover < 0.01          # +0.1 bias, standard error ~0.007: never covers
    assert width < human_width         # the judge's labels buy a narrower interval


def test_files_cli_text_and_json(tmp_path, capsys):
    j = _write(tmp_path / "judge.tsv", JUDGE.items())
    h = _write(tmp_path / "human.tsv", HUMAN.items())
    assert main(["ppi", "--judge-values", str(j), "--human-values", str(h), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ref = ppi_files(j, h)
    assert out["estimate"] == pytest.approx(0.7 - 0.5 / 3)
    assert {k: out[k] for k in ("ci_low", "ci_high", "judge_only", "human_only")} == \
        pytest.approx({"ci_low": ref.ci_low, "ci_high": ref.ci_high,
                       "judge_only": ref.judge_only, "human_only": ref.human_only})
    assert (out["n_labeled"], out["n_total"]) == (3, 6)
    assert main(["ppi", "--judge-values", str(j), "--human-values", str(h), "--method", "ppi++",
                 "--confidence", "0.9"]) == 0
    text = capsys.readouterr().out
    assert "judge-only mean  0.6500" in text
    assert "human-only mean  0.4333  90% CI" in text
    assert "PPI++  estimate" in text and "warning: 3 labelled items (< 30)" in text


@pytest.mark.parametrize("judge_rows, human_rows, message", [
    (JUDGE.items(), [("t1", 0.5), ("t9", 0.3)], "human.tsv: field 'item': 1 human item(s) have "
                                                "no judge value, first 't9'"),
    (JUDGE.items(), [("t1", 0.5), ("t2", 0.5), ("t3", 0.5)], "all 3 human values are 0.5"),
    (JUDGE.items(), [], "human.tsv: no 'item<TAB>value' line"),
    ([], HUMAN.items(), "judge.tsv: no 'item<TAB>value' line"),
    (JUDGE.items(), [("t1", "0.5x")], "human.tsv: line 1: field 'value': '0.5x' is not a number"),
    (JUDGE.items(), [("t1", 0.5), ("t1", 0.6)], "line 2: field 'item': item 't1' again"),
    (list(HUMAN.items()), HUMAN.items(), "every one of the 3 judge items has a human value"),
    (JUDGE.items(), [("t1", 0.5)], "1 labelled item(s): PPI needs at least 2"),
])
def test_bad_input_is_one_line(tmp_path, capsys, judge_rows, human_rows, message):
    j = _write(tmp_path / "judge.tsv", judge_rows)
    h = _write(tmp_path / "human.tsv", human_rows)
    assert main(["ppi", "--judge-values", str(j), "--human-values", str(h)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cruxflow: error: ") and message in err and err.count("\n") == 1


def test_reader_skips_blank_lines_and_reads_crlf(tmp_path):
    p = tmp_path / "v.tsv"
    p.write_bytes(b"\xef\xbb\xbfa\t1\r\n\r\nb\t0.25\r\n")
    assert read_item_values(p) == {"a": 1.0, "b": 0.25}
    with pytest.raises(DataError, match="expected 'item<TAB>value'"):
        (tmp_path / "w.tsv").write_text("a 1\n")
        read_item_values(tmp_path / "w.tsv")


def test_without_the_judge_extra_the_error_names_it(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "ppi_py", None)   # as if not installed
    with pytest.raises(ModuleNotFoundError, match=r"needs the 'judge' extra: pip install "
                                                  r"'cruxflow\[judge\]' \(ppi_py is not"):
        ppi_mean(JUDGE, HUMAN)

"""`cruxflow annotate` in a real browser: the server runs on 127.0.0.1 and Debian's headless
Chromium, driven through Selenium and chromedriver, annotates with the keyboard.

scripts/browser.sh installs chromium and chromium-driver when missing (root, Debian's package
registry), so these tests run only with CRUXFLOW_INVASIVE_TESTS=1 (tests/conftest.py), which
scripts/test.sh sets; CRUXFLOW_BROWSER=skip skips them even then. With
CRUXFLOW_ANNOTATE_SCREENSHOTS=DIR the screenshots of both tasks' pages are also written to DIR
(docs/annotate.md shows them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from annotate_helpers import REPO, REPORT, TEXTS, WAVE, Server, make_dataset, write_reports

from cruxflow.annotate.store import Store

pytestmark = pytest.mark.invasive
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1400,1000"]


@pytest.fixture(scope="module")
def chromium():
    if os.environ.get("CRUXFLOW_BROWSER") == "skip":
        pytest.skip("CRUXFLOW_BROWSER=skip: no browser on this machine")
    proc = subprocess.run(["bash", str(REPO / "scripts/browser.sh")], capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, f"could not install chromium:\n{proc.stdout}\n{proc.stderr}"


@pytest.fixture
def browser(chromium, tmp_path, monkeypatch):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")     # Selenium Manager must not look for drivers
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture
def data(tmp_path) -> Path:
    return make_dataset(tmp_path / "data")


def wait(driver, condition, timeout: float = 10):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def press(driver, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    for key in keys:
        ActionChains(driver).send_keys(key).perform()


def saved(driver, question: int) -> None:
    """The answer to the last save sent, ``question``'s (one save in flight)."""
    wait(driver, lambda d: d.find_element("id", "status").text == f"saved Q-{question}")


def cleared(driver) -> None:
    """Empty the status line once a save is answered, so that the next :func:`saved` waits
    for the next save: a span's save and the answer's go to the same question, and the
    span's "saved Q-n" would otherwise let the test press on with the answer's save in flight
    (its reply landing after the next one's left "saved Q-n" where Q-n+1 was awaited)."""
    driver.execute_script("document.getElementById('status').textContent = '';")


def active(driver) -> list[str]:
    """The chosen answer of each question on the screen ('' where none)."""
    rows = driver.find_elements("css selector", ".question")
    return [" ".join(b.text for b in row.find_elements("css selector", ".choice.active"))
            for row in rows]


def focused(driver) -> int:
    rows = driver.find_elements("css selector", ".question")
    return next(i for i, row in enumerate(rows) if "focused" in row.get_attribute("class"))


def select_text(driver, phrase: str) -> None:
    """Select ``phrase`` inside the passage, as a drag of the mouse would."""
    driver.execute_script("""
        const el = document.getElementById('text');
        const node = el.firstChild, at = node.data.indexOf(arguments[0]);
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + arguments[0].length);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);""", phrase)


def screenshot(driver, tmp_path: Path, name: str, docs: bool = False) -> Path:
    """A PNG of the page; with ``docs``, also one for docs/annotate.md when asked for."""
    path = tmp_path / name
    driver.save_screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
    if docs and os.environ.get("CRUXFLOW_ANNOTATE_SCREENSHOTS"):
        target = Path(os.environ["CRUXFLOW_ANNOTATE_SCREENSHOTS"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target / name)
    return path


def test_keyboard_ratings_are_kept_across_a_reload(browser, data, tmp_path):
    db = tmp_path / "r.sqlite"
    server = Server("--dataset", str(data), "--task", "ratings", "--annotators", "a", "b", "c",
                    "--db", str(db), cwd=tmp_path)
    try:
        browser.get(server.links["a"])
        # a's first item is t1:0#0, asking the kept q0, q1, q2, q4
        assert browser.current_url.endswith("/item/1")
        assert "t1:0#0" in browser.page_source
        assert browser.find_element("id", "text").text.startswith("The Halden Ridge Dam")
        assert "highly relevant, complete, and accurate" in browser.page_source   # the rubric
        assert "judge:" not in browser.page_source        # the LLM's ratings are hidden
        press(browser, "4")                               # q0: 4, and on to q1
        saved(browser, 0)
        assert focused(browser) == 1
        press(browser, "c")                               # q1: cannot judge, on to q2
        saved(browser, 1)
        select_text(browser, "heavy rain")                # after the wave: offsets differ in JS
        press(browser, "h")                               # q2's rationale, before its rating
        wait(browser, lambda d: "heavy rain" in d.find_elements(
            "css selector", ".question .span")[2].text)
        cleared(browser)                                  # the span's save answered
        press(browser, "2")                               # q2: 2, on to q4
        saved(browser, 2)
        assert focused(browser) == 3

        browser.refresh()
        assert active(browser) == ["4", "cannot judge", "2", ""]
        assert focused(browser) == 3                      # the first open question
        assert not browser.find_elements("css selector", "#text mark")   # q4 has no span
        press(browser, "k")                               # q2: its rationale marked
        assert browser.find_element("css selector", "#text mark").text == "heavy rain"
        screenshot(browser, tmp_path, "annotate-ratings.png")
        press(browser, "j")
        labels = {x.question: x for x in Store(db).labels("a")}
        start = TEXTS["t1:0#0"].index("heavy rain")
        assert TEXTS["t1:0#0"].index(WAVE) < start        # a code point index, not UTF-16
        assert (labels[2].value, labels[2].span.start, labels[2].span.end) == (2, start,
                                                                               start + 10)
        assert labels[1].cannot_judge and labels[0].value == 4

        press(browser, "5")
        saved(browser, 4)
        press(browser, "\ue007")                          # Enter: all done, the next item
        wait(browser, lambda d: d.current_url.endswith("/item/2"))
        assert "t1:1#2" in browser.page_source            # a's second item (queue 0, 2, 3)
    finally:
        server.stop()
    # a restart serves the same links and resumes at a's first open item
    again = Server("--db", str(db), cwd=tmp_path)
    try:
        assert again.links["a"].split("/a/")[1] == server.links["a"].split("/a/")[1]
        browser.get(again.links["a"])
        assert browser.current_url.endswith("/item/2")
    finally:
        again.stop()


def test_another_token_sees_and_writes_nothing_of_the_first(browser, data, tmp_path):
    db = tmp_path / "r.sqlite"
    server = Server("--dataset", str(data), "--task", "ratings", "--annotators", "a", "b", "c",
                    "--db", str(db), cwd=tmp_path)
    try:
        browser.get(server.links["a"])                    # item 0, shared by a and b
        press(browser, "5", "3")           # two saves in flight at once (a digit moves on)
        wait(browser, lambda d: active(d)[:2] == ["5", "3"])
        browser.get(server.links["b"])
        assert browser.current_url.endswith("/item/1") and "t1:0#0" in browser.page_source
        assert active(browser) == ["", "", "", ""]        # none of a's ratings
        browser.get(server.links["b"] + "api/labels")
        assert json.loads(browser.find_element("tag name", "body").text) == {
            "annotator": "b", "labels": []}
        # item 2 is a's and c's only: b's token cannot write it
        browser.get(server.links["b"])
        answer = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            fetch(arguments[0], {method: 'POST', headers: {'Content-Type': 'application/json'},
                                 body: JSON.stringify({item: 2, question: 0, value: 1})})
              .then(async r => done([r.status, await r.json()]));""",
                                              server.links["b"] + "api/label")
        assert answer == [403, {"error": "item 2 is not assigned to b"}]
        browser.get(server.root + "/a/not-the-token/")
        assert "unknown annotator token" in browser.page_source
        store = Store(db)
        assert [(x.annotator, x.question, x.value) for x in store.labels()] == [
            ("a", 0, 5), ("a", 1, 3)]
        assert store.n_events() == 2
    finally:
        server.stop()


def test_report_labels_export_to_the_kappa_computed_by_hand(browser, data, tmp_path):
    reports = write_reports(tmp_path / "bm25.koracle.jsonl", [("t1", "bm25", REPORT)])
    db = tmp_path / "t1.sqlite"
    server = Server("--dataset", str(data), "--task", "reports", "--reports", str(reports),
                    "--annotators", "a", "b", "--db", str(db), cwd=tmp_path)
    try:
        # the report's kept questions q0, q1, q2, q4; a says yes no yes yes, b yes no no yes
        for name, keys in {"a": "ynyy", "b": "ynny"}.items():
            browser.get(server.links[name])
            assert "Does the report answer each question?" in browser.page_source
            for i, key in enumerate(keys):
                if i == 0:                                # the span first: a key moves on
                    select_text(browser, "12 March 2023")
                    press(browser, "h")
                    wait(browser, lambda d: "12 March 2023" in d.find_elements(
                        "css selector", ".question .span")[0].text)
                    cleared(browser)                      # the span's save answered
                press(browser, key)
                saved(browser, [0, 1, 2, 4][i])
                assert focused(browser) == min(i + 1, 3)
            if name == "a":
                press(browser, "k", "k", "k")             # back to q0, its span in view
                wait(browser, lambda d: d.find_elements("css selector", "#text mark"))
                screenshot(browser, tmp_path, "annotate-reports.png")
        browser.get(server.links["a"])                    # all done: the progress page
        assert browser.current_url.endswith("/progress")
        assert browser.find_element("id", "totals").text == (
            "1 of 1 items done, 4 of 4 questions labelled.")
        browser.get(server.links["admin"] + "adjudicate")
        assert "1 questions labelled differently" in browser.find_element("tag name", "main").text
        assert browser.find_element("id", "kappa").text.startswith(
            "Fleiss' kappa 0.467 over 4 questions")
        # the export, while the server runs
        out = tmp_path / "labels"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        subprocess.run([sys.executable, "-m", "cruxflow.cli", "annotate", "--db", str(db),
                        "--export", str(out)], check=True, env=env, capture_output=True)
    finally:
        server.stop()
    rows = [json.loads(x) for x in (out / "report_labels.jsonl").read_text().splitlines()]
    spans = {(r["annotator"], r["question"]): r["span"] for r in rows if r["span"]}
    start = REPORT.index("12 March 2023")
    assert spans == {(a, 0): {"start": start, "end": start + 13, "text": "12 March 2023"}
                     for a in "ab"}
    proc = subprocess.run([sys.executable, "-m", "cruxflow.cli", "agreement", "--human-reports",
                           str(out / "report_labels.jsonl"), "--json"], env=env,
                          capture_output=True, text=True, check=True)
    fleiss = json.loads(proc.stdout)["t1"]["fleiss"]
    # units (1,1) (0,0) (1,0) (1,1): P = 3/4, p(1) = 5/8, P_e = 25/64 + 9/64 = 17/32,
    # kappa = (3/4 - 17/32) / (1 - 17/32) = 7/15
    assert fleiss["kappa"] == pytest.approx(7 / 15)
    assert (fleiss["n_items"], fleiss["n_dropped"]) == (4, 0)


def test_review_mode_on_the_demo_data(browser, tmp_path):
    """The demo's CRUX dataset: review mode shows the judge's rating beside each question and
    marks the labels given there; the pages of both tasks are photographed for the docs."""
    from cruxflow.cli import main
    from cruxflow.data.model import Dataset

    assert main(["ingest", "--format", "crux", "--input", str(REPO / "resources/demo/crux"),
                 "--output", str(tmp_path / "demo")]) == 0
    demo = Dataset.load(tmp_path / "demo")
    db = tmp_path / "demo.sqlite"
    args = ["--dataset", str(tmp_path / "demo"), "--task", "ratings", "--annotators",
            "ann1", "ann2", "--sample", "200", "--uncertain-share", "0.5", "--seed", "1",
            "--db", str(db)]
    server = Server(*args, cwd=tmp_path)
    store = Store(db)
    item = store.items[store.queues["ann1"][0]]
    try:
        browser.get(server.links["ann1"] + "item/1")
        assert "judge:" not in browser.page_source
        press(browser, "4")                              # rates q0 and moves on to q1
        saved(browser, item.questions[0].index)
        press(browser, "\ue013")                         # arrow up: back to q0
        phrase = "killing at least four people"           # the seed's first item has it
        sentence = phrase if phrase in item.text else item.text[:item.text.index(" ")]
        select_text(browser, sentence)
        press(browser, "h")
        wait(browser, lambda d: d.find_elements("css selector", "#text mark"))
        screenshot(browser, tmp_path, "annotate-ratings.png", docs=True)
    finally:
        server.stop()
    server = Server("--db", str(db), "--review", cwd=tmp_path)
    try:
        browser.get(server.links["ann1"] + "item/1")
        chips = [e.text for e in browser.find_elements("css selector", ".question .llm")]
        judge = demo.ratings[(item.topic_id, item.target)]
        assert chips == [f"judge: {judge[q.index]}" for q in item.questions]
        press(browser, "\ue013", "2")                    # arrow up to q0: a correction
        saved(browser, item.questions[0].index)
        first = next(x for x in Store(db).labels("ann1") if x.question == item.questions[0].index)
        assert (first.value, first.review, first.span.text) == (2, True, sentence)
        screenshot(browser, tmp_path, "annotate-review.png", docs=True)
    finally:
        server.stop()
    assert [e.value for e in Store(db).labels("ann1")] == [2]
    # a report stitched from two of the topic's passages, to show the reports task's page
    topic = demo.topics["demo-0"]
    text = " ".join(demo.passages[p].contents for p in ("demo-0:0#0", "demo-0:0#1"))
    reports = write_reports(tmp_path / "demo.jsonl", [("demo-0", "stitched", text)])
    server = Server("--dataset", str(tmp_path / "demo"), "--task", "reports", "--reports",
                    str(reports), "--annotators", "ann1", "--db", str(tmp_path / "t1.sqlite"),
                    cwd=tmp_path)
    try:
        browser.get(server.links["ann1"])
        assert topic.questions[0] in browser.page_source
        for phrase in ("failed at about 3:40 a.m. after three days of heavy rain",
                       "killing at least four people"):
            # the span first, for the focused question; the answer then moves on to the next
            select_text(browser, phrase)
            press(browser, "h")
            wait(browser, lambda d, p=phrase: d.find_element("css selector", "#text mark").text
                 == p)
            press(browser, "y")
        press(browser, "k", "k")                          # back to q0, its span marked
        screenshot(browser, tmp_path, "annotate-reports.png", docs=True)
    finally:
        server.stop()

"""A small dataset, reports and a running `cruxflow annotate` server, shared by the annotation
app's tests (tests/test_annotate*.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from cruxflow.data.model import Dataset, Passage, Topic

REPO = Path(__file__).resolve().parents[1]

# t1 asks 5 sub-questions; the judge's best rating per question is 5, 4, 3, 2, 3: at eta 3 the
# kept ones are q0, q1, q2, q4 (q3 no passage answers). t2's q0 and q1 are answered (kept).
T1_RATINGS = {"t1:0#0": [5, 0, 3, 2, 0], "t1:0#1": [1, 4, 0, 0, 3], "t1:1#2": [0, 2, 1, 1, 0]}
T2_RATINGS = {"t2:0#0": [3, 0, 2], "t2:0#1": [0, 4, 2]}
# A character beyond the BMP: Python counts it as one, JavaScript's strings as two.
WAVE = "\U0001F30A"
TEXTS = {
    "t1:0#0": f"The Halden Ridge Dam failed before dawn on 12 March 2023 {WAVE} after two days of "
              "heavy rain, and the flood reached Marlow Falls within the hour.",
    "t1:0#1": "Fourteen people died in the flood, officials said, and about 2,300 residents "
              "were evacuated from the Tully River valley.",
    "t1:1#2": "Inspectors had rated the spillway unsatisfactory in 2019, records show.",
    "t2:0#0": "The drought cut the wheat harvest by a third in the southern provinces.",
    "t2:0#1": "Grain prices rose 40 percent in six months, the ministry reported.",
}
QUESTIONS = {
    "t1": ["When did the dam fail?", "How many people died in the flood?",
           "What weather preceded the collapse?", "Who owned the dam?",
           "How many residents were evacuated?"],
    "t2": ["How much did the harvest fall?", "How much did grain prices rise?",
           "Which provinces were hit?"],
}
REPORT = ("The Halden Ridge Dam collapsed on 12 March 2023 after heavy rain. The flood killed "
          "fourteen people. Its owner has not commented.")


def make_dataset(directory: Path) -> Path:
    topics = {t: Topic(t, None, [], query=f"Write a report about {t}.", questions=qs)
              for t, qs in QUESTIONS.items()}
    passages = {pid: Passage(pid, text, pid.split(":")[0], pid.split("#")[0])
                for pid, text in TEXTS.items()}
    ratings = {(pid.split(":")[0], pid): r for pid, r in {**T1_RATINGS, **T2_RATINGS}.items()}
    Dataset(topics, passages=passages, ratings=ratings).save(directory)
    return directory


def write_reports(path: Path, reports: list[tuple[str, str, str]]) -> Path:
    """``(topic, system, text)`` as rule rag_generate writes them."""
    path.write_text("".join(json.dumps({"topic_id": t, "system": s, "k": "oracle", "report": x})
                            + "\n" for t, s, x in reports))
    return path


class Server:
    """`cruxflow annotate` in a subprocess on 127.0.0.1, a free port; its printed links."""

    def __init__(self, *args: str, cwd: Path):
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cruxflow.cli", "annotate", "--port", "0", *args],
            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.links: dict[str, str] = {}
        self.lines = []
        for line in self.proc.stdout:
            self.lines.append(line)
            head, _, link = line.strip().partition(": http")
            if link:
                self.links[head.split(" ")[0]] = "http" + link.split(" ")[0]
            if line.startswith("Ctrl-C"):
                break
        else:
            raise AssertionError(f"the server did not start: {self.lines} "
                                 f"{self.proc.stderr.read()}")
        self.root = self.links["admin"].split("/admin/")[0]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def request(url: str, body: dict | bytes | None = None) -> tuple[int, dict]:
    """GET (no body) or POST a JSON body; the status and the decoded JSON answer."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())

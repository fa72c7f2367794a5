"""The flags renamed when the command line got one vocabulary (:mod:`cruxflow.cli.vocabulary`,
docs/cli.md): where the old name is a flag with a meaning of its own it is refused with one line
naming the new flag; else it stays accepted, hidden, with one deprecation line."""

from __future__ import annotations

from cruxflow.cli.flags import Renamed

# (command, old flag) -> the flag now. Where the old name is a flag of the vocabulary with a
# meaning of its own, it is refused (one line naming the new flag); else it stays accepted,
# hidden, with one deprecation line.
RENAMED: dict[tuple[str, str], Renamed] = {
    ("meta-eval", "--runs"): Renamed("--run"),
    ("meta-eval", "--k"): Renamed("--measure", "the measures by name: --measure Cov@K "
                                               "alpha_nDCG_crux@K for the old --k K"),
    ("meta-eval", "--alpha"): Renamed("--confidence", "PPI's interval level: --confidence 0.95 "
                                                      "for the old --alpha 0.05"),
    ("ppi", "--alpha"): Renamed("--confidence", "the interval's level: --confidence 0.95 for "
                                                "the old --alpha 0.05"),
    ("ppi", "--judge"): Renamed("--judge-values"),
    ("ppi", "--human"): Renamed("--human-values"),
    ("agreement", "--passages"): Renamed("--human", "the annotators' Task 2 ratings"),
    ("agreement", "--reports"): Renamed("--human-reports", "the annotators' Task 1 labels"),
    ("support", "--input"): Renamed("--answers"),
    ("support", "--judge"): Renamed("--judge-pairs", "which cited pairs the LLM judges"),
    ("udcg", "--input"): Renamed("--questions"),
    ("udcg", "--judge-attempts"): Renamed("--attempts"),
    ("kpr", "--input"): Renamed("--questions"),
    ("export", "--collection"): Renamed("--collection-name", "the NuggetBank test_collection"),
    ("evaluate", "--name"): Renamed("--run-name"),
    ("evaluate", "--paired"): Renamed("--test", "one test: t-test or none as before; both is "
                                                "gone"),
    ("crux-eval", "--paired"): Renamed("--test", "one test: t-test or none as before; both is "
                                                 "gone"),
    ("ingest", "--corpus"): Renamed("--collection"),
    ("init", "--name"): Renamed("--dataset-name"),
    ("init", "--questions"): Renamed("--n-questions", "how many sub-questions per topic"),
}

"""The one rule by which several annotators' labels of one item become one label: used by
ingest (the labeling tool's human ratings, ``--judge-merge``), by ``cruxflow agreement`` and by
its PPI (``--merge``), so that "the human label" of an item is the same number in every door.

Every rule takes the integer labels of the annotators who labelled the item (at least one) and
gives one integer label:

* ``mean``: their mean rounded half up (3 and 2 give 3), the default;
* ``majority``: their median, the lower of the two middle labels for an even count (2 and 4
  give 2; for two classes the majority, a tie going to the lower class);
* ``min``, ``max``: the lowest, the highest label.
"""

from __future__ import annotations

from collections.abc import Sequence


def _mean(labels: Sequence[int]) -> int:
    """The mean rounded half up (3 and 2 give 3), in integers."""
    return (2 * sum(labels) + len(labels)) // (2 * len(labels))


def _majority(labels: Sequence[int]) -> int:
    return sorted(labels)[(len(labels) - 1) // 2]


MERGE_RULES = {"mean": _mean, "majority": _majority, "min": min, "max": max}
DEFAULT_MERGE = "mean"
MERGE_WORDS = {"mean": "their mean, rounded half up", "majority": "their lower median "
               "(the majority; a tie to the lower label)", "min": "their minimum",
               "max": "their maximum"}


def merge_labels(labels: Sequence[int], rule: str = DEFAULT_MERGE) -> int:
    """One label from the annotators' ``labels`` of an item (at least one) by ``rule``."""
    if rule not in MERGE_RULES:
        raise ValueError(f"unknown merge rule {rule!r}; choose one of {', '.join(MERGE_RULES)}")
    if not labels:
        raise ValueError("no label to merge")
    return int(MERGE_RULES[rule](labels))


def describe(rule: str) -> str:
    """The rule in words, for an output that used it: ``merged by mean (their mean, rounded
    half up)``."""
    return f"merged by {rule} ({MERGE_WORDS[rule]})"

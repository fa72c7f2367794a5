"""``python -m cruxflow.beyond.autojudge ...``: auto-judge-base's own command line (``auto-judge
run --workflow workflow.yml ...``), started with the network kept out of its import
(:mod:`.offline`). docs/autojudge.md shows a workflow.yml that names the cruxflow judge."""

from __future__ import annotations

import sys

from cruxflow.beyond.autojudge.offline import import_autojudge


def main(argv: list[str] | None = None) -> None:
    import_autojudge("python -m cruxflow.beyond.autojudge")
    from autojudge_base.cli import main as autojudge_main

    sys.argv = ["auto-judge", *(sys.argv[1:] if argv is None else argv)]
    autojudge_main()


if __name__ == "__main__":
    main()

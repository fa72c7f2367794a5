"""Rule paper_tables: per-query Z and y metrics of every RAG dataset -> Tables 1-3, the paired
tests and the Cov(Z)-vs-Cov(y) scatter (paper Sec. 4)."""

import pandas as pd

from cruxflow.data.io import write_json
from cruxflow.data.names import ORACLE_K
from cruxflow.data.outputs import atomic_write
from cruxflow.metrics.stats import Policy
from cruxflow.metrics.tokens import describe_token_counter
from cruxflow.paper import significance, tables
from cruxflow.paper.figures import plot_intermediate_vs_final
from cruxflow.workflow.job import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
log = setup_logging(sm)
p, out = sm.params, sm.output
per_query = pd.concat([pd.read_csv(f, sep="\t", dtype={"k": str, "topic": str, "system": str})
                       for f in sm.input], ignore_index=True)
boot = {"n_resamples": p.bootstrap, "seed": p.seed}


def write(path, text):
    with atomic_write(path) as f:
        f.write(text if text.endswith("\n") else text + "\n")


t1 = tables.table1(per_query, eta=p.eta, k=ORACLE_K, **boot)
write(out.table1_csv, tables.to_csv(t1))
write(out.table1_md, tables.table1_markdown(t1))
write(out.table1_tex, tables.table1_latex(t1, caption=p.captions["table1"]))
t2 = tables.table2(per_query, etas=p.etas, k=ORACLE_K, **boot)
write(out.table2_csv, tables.to_csv(t2))
write(out.table2_md, tables.table2_markdown(t2))
write(out.table2_tex, tables.table2_latex(t2, caption=p.captions["table2"]))
t3 = tables.table3(per_query, eta=p.eta, **boot)
write(out.table3_csv, tables.to_csv(t3))
write(out.table3_md, tables.table3_markdown(t3))
write(out.table3_tex, tables.table3_latex(t3, caption=p.captions["table3"]))
at_k = tables.select(per_query, eta=p.eta, k=ORACLE_K)
policy = Policy(**p.significance)   # the config's rag.significance: the policy's defaults
tests = significance.paired_tests(at_k, ["Cov_y", "Cov"], policy=policy)
write(out.significance_csv, tables.to_csv(tests))
write(out.significance_md, significance.paired_tests_markdown(tests))
# what the numbers depend on: the token counter (Den, token(Z*)) and the parity choices
write_json(out.manifest, {"token_counter": describe_token_counter(p.tokenizer), **p.settings})
plot_intermediate_vs_final(t1, out.scatter)
plot_intermediate_vs_final(t1, out.scatter_zoom, zoom=True)
log.info("tables over %d datasets, %d systems; %d paired tests: %s", per_query.dataset.nunique(),
         per_query.system.nunique(), len(tests), policy.describe("group and metric"))

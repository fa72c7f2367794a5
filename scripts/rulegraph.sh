#!/usr/bin/env bash
# The rule graph of docs/architecture.md: writes docs/rulegraph.dot (`snakemake --rulegraph`)
# and renders it to docs/rulegraph.svg with Graphviz's dot (Debian: apt-get install graphviz).
# `scripts/rulegraph.sh --print` only prints the .dot text (no Graphviz needed; the test
# tests/test_architecture.py compares it with the committed file).
#
# The graph is drawn for config.yaml plus the optional branches the default leaves off, so
# that every rule appears: a cross-encoder (rule rerank; the default's MMR runs in
# rerank_pooled), a listwise reranker and human labels (T1, T2) on demo-multinews,
# the holes of demo-crux's judgments (rule judge_holes) and the cost plan (a target of its own,
# not part of all).
# Snakemake needs the label files to exist, not to hold anything: empty ones are made here.
set -euo pipefail
cd "$(dirname "$0")/.."
SNAKEMAKE="${SNAKEMAKE:-.venv/bin/snakemake}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/t1.jsonl" "$tmp/t2.jsonl"
cat > "$tmp/every_rule.yaml" <<EOF
datasets:
  demo-multinews:
    human_labels: {reports: $tmp/t1.jsonl, passages: $tmp/t2.jsonl}
retrieval:
  rerankers:
    minilm: {kind: cross-encoder, model: cross-encoder/ms-marco-MiniLM-L-6-v2}
    zephyr: {kind: listwise, model: castorini/rank_zephyr_7b_v1_full}
holes:
  demo-crux: {}
EOF

# Snakemake writes the edges in no fixed order: sorted (by target, then source), a regenerated
# file differs from the committed one only where the graph does.
rulegraph() {
    "$SNAKEMAKE" all plan --rulegraph dot --configfile config.yaml "$tmp/every_rule.yaml" \
        >"$tmp/raw.dot" 2>"$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
    local edge=$'^\t[0-9]+ -> [0-9]+$'
    grep -Ev "$edge" "$tmp/raw.dot" | sed '$d'
    grep -E "$edge" "$tmp/raw.dot" | sort -b -k3,3n -k1,1n
    echo "}"
}

if [[ "${1:-}" == "--print" ]]; then
    rulegraph
    exit 0
fi
rulegraph > docs/rulegraph.dot
dot -Tsvg docs/rulegraph.dot -o docs/rulegraph.svg
echo "wrote docs/rulegraph.dot and docs/rulegraph.svg"

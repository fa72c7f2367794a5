"""``cruxflow judge --run RUN [RUN ...] (--dataset DIR | --crux-root DIR) --output DIR``: rate
the unjudged passages in the runs' top k against their topics' sub-questions, and write them as
added ratings that every door reads beside the original ones (docs/judge.md)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from cruxflow.cli import args as types
from cruxflow.cli import vocabulary
from cruxflow.cli.llm_options import add_llm_arguments, runner_from_args
from cruxflow.data.errors import DataError

OUTPUT_FILE = "ratings.judged.jsonl"


def output_name(shard: tuple[int, int] | None) -> str:
    """The ratings file of a call: one per shard (``ratings.judged.<i>-<n>.jsonl``, the CRUX
    authors' shard suffix), so that the shards' files sit side by side in one folder."""
    return OUTPUT_FILE if shard is None else f"ratings.judged.{shard[0]}-{shard[1]}.jsonl"


def _inputs(args):
    """(the dataset, the passage texts, the (topic, passage) pairs an original rating rates)."""
    from cruxflow.data.ingest.crux_common import read_collection, read_ratings

    if (args.dataset is None) == (args.crux_root is None):
        raise DataError("give one of --dataset and --crux-root")
    judge = list(args.judge or [])
    if args.dataset is not None:
        from cruxflow.data.model import Dataset

        dataset = Dataset.load(args.dataset, with_passages=True)
    else:
        from cruxflow.data.ingest import IngestOptions
        from cruxflow.data.ingest.crux import read_crux

        corpus = None if args.collection is None else str(args.collection)
        dataset, _ = read_crux(args.crux_root, IngestOptions(
            collection=corpus, judge=[str(p) for p in judge]))
        judge = judge or [p for p in [Path(args.crux_root) / "judge"] if p.exists()]
    texts = {pid: p.contents for pid, p in dataset.passages.items()}
    if args.collection is not None:
        texts.update(read_collection(args.collection)[0])
    if judge:   # the pairs of the original ratings (an added one does not fill a hole)
        read = read_ratings(judge, n_questions={t: len(x.questions)
                                                for t, x in dataset.topics.items()
                                                if x.questions})
        judged = set(read.ratings) - set(read.sources)
    else:
        judged = set(dataset.ratings)
    return dataset, texts, judged


def judge_settings(config_path) -> tuple[dict, object]:
    """(the rating options, the judge's sampling) of a workflow config's llm section, its
    defaults filled in; the schema's defaults without a config."""
    import copy

    from cruxflow.data.io import read_yaml
    from cruxflow.stages.ratings import rating_options
    from cruxflow.workflow.config import config_schema, with_defaults
    from cruxflow.workflow.job import sampling

    llm = {}
    if config_path is not None:
        config = read_yaml(config_path) or {}
        llm = copy.deepcopy(config.get("llm") or {}) if isinstance(config, dict) else {}
    llm = with_defaults(llm, config_schema()["properties"]["llm"])
    return rating_options(llm), sampling(llm, "judgment")


def _cmd_judge(args) -> int:
    from cruxflow.data.io import write_jsonl
    from cruxflow.stages.holes import judge_runs

    # several k (those a later evaluate scores at): the deepest holds the others' top k
    depth = max(types.rank_cutoffs(args.k, "judge", "the depth of each run that is judged"))
    dataset, texts, judged = _inputs(args)
    shard, shards = args.shard or (0, 1)
    options, sampling = judge_settings(args.config)
    records, summary, runner = judge_runs(
        dataset, {str(r): r for r in args.run}, texts,
        lambda: runner_from_args(args, default_cache=args.output / "llm_cache.sqlite",
                                 desc="judge"),
        k=depth, shard=shard, shards=shards, prompt=args.rating_prompt, sampling=sampling,
        options=options, judged=judged)
    stats = {}
    if runner is not None:
        stats = runner.stats.to_json()
        runner.close()
    path = args.output / output_name(args.shard)
    write_jsonl(path, records)
    summary = {**summary, "output": str(path), "llm": stats}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{summary['ranked_pairs']} (topic, passage) pairs in the top {depth} of "
          f"{len(args.run)} runs, {summary['holes']} of them unjudged; this call (shard "
          f"{shard}/{shards}) rated {summary['rated']} of them on {summary['rated_pairs']} "
          f"(passage, question) pairs ({stats.get('cache_hits', 0)} answers from the cache)")
    for key, what in (("run_topics_not_in_the_dataset", "run topics not in the dataset"),
                      ("run_topics_without_questions", "run topics without sub-questions"),
                      ("holes_without_text", "unjudged passages without a text (give "
                                             "--collection): not rated")):
        if summary[key]:
            shown = ", ".join(summary[key][:5]) + (", ..." if len(summary[key]) > 5 else "")
            print(f"left out: {len(summary[key])} {what}: {shown}")
    print(f"wrote {path} (source: {summary['source']})")
    return 0


def add_command(subparsers) -> None:
    """Add ``cruxflow judge`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "judge",
        description="Rate the passages in the top k of one or more runs that no original "
                    "rating rates for their topic, against the topic's sub-questions, with "
                    "the dataset's rating prompt or the CRUX authors' augmentation prompt, "
                    "through the cached LLM layer; write them as added ratings (each record "
                    "naming its source) that evaluate, crux-eval, meta-eval, ingest and "
                    "cruxflow.evaluate read beside the original ones. See docs/judge.md.")
    add = partial(vocabulary.add, p)
    add("run", required=True, detail="their top k is judged")
    add("dataset", detail="its topics, passages and ratings")
    add("crux-root", detail="its topics, sub-questions and judge/ (the passages of "
                            "crux-mds-corpus beside it, or --collection)")
    add("judge", detail="here the original ratings, in place of the dataset's own; the "
                        "holes are the pairs none of them rates")
    add("collection", detail="the texts of the passages the runs rank")
    add("k", default=[20], detail="here positive integers, the depth of each run that is "
                                  "judged (the CRUX authors' Researchy offload: 20); several: "
                                  "the deepest, which holds the top k of each")
    add("rating-prompt")
    add("shard")
    add("output", required=True, detail=f"here {OUTPUT_FILE} (ratings.judged.<i>-<n>.jsonl "
                                        "with --shard) and the LLM cache")
    add("json")
    add_llm_arguments(p)
    p.set_defaults(func=_cmd_judge, writes=(OUTPUT_FILE, "llm_cache.sqlite"))

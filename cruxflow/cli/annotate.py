"""``cruxflow annotate --dataset DIR --task {ratings,reports} --annotators a b c``: a web app that
collects the paper's human labels (App. A.2) into a SQLite database, and ``--export DIR`` writes
them in the formats ``cruxflow agreement`` reads (docs/annotate.md)."""

from __future__ import annotations

import socket
import sys
from functools import partial
from pathlib import Path

from cruxflow.cli import vocabulary

LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def _requested(args) -> dict:
    """The options that define a database, as given (None: not given)."""
    return {"task": args.task,
            "dataset": None if args.dataset is None else str(args.dataset.resolve()),
            "reports": None if args.reports is None else [str(r) for r in args.reports],
            "annotators": args.annotators, "overlap": args.overlap, "sample": args.sample,
            "uncertain_share": args.uncertain_share, "seed": args.seed, "eta": args.eta,
            "for_ppi": args.for_ppi}


def _create(args, db: Path):
    from cruxflow.annotate.assign import (
        RATINGS,
        assign,
        rating_items,
        rating_pairs,
        read_reports,
        report_items,
        sample_pairs,
        stratified_sample,
    )
    from cruxflow.annotate.store import Store
    from cruxflow.data.errors import DataError
    from cruxflow.data.model import Dataset

    missing = [flag for flag, value in (("--dataset", args.dataset), ("--task", args.task),
                                        ("--annotators", args.annotators)) if value is None]
    if missing:
        raise SystemExit(f"cruxflow annotate: error: {db} does not exist yet: a new database "
                         f"needs {', '.join(missing)}")
    settings = _requested(args)
    settings.update(overlap=min(len(args.annotators), 2) if args.overlap is None else args.overlap,
                    seed=vocabulary.VOCABULARY["seed"].default if args.seed is None
                    else args.seed,
                    eta=vocabulary.VOCABULARY["eta"].default if args.eta is None else args.eta)
    dataset = Dataset.load(args.dataset, with_passages=args.task == RATINGS)
    try:
        if args.task == RATINGS:
            if args.reports:
                raise ValueError("--reports belongs to the reports task")
            if not dataset.ratings or not dataset.passages:
                raise DataError("the ratings task needs the judge's ratings and the passages",
                                path=args.dataset)
            if args.for_ppi and args.uncertain_share is not None:
                raise ValueError("--for-ppi draws uniformly within topics; --uncertain-share "
                                 "over-draws the judge's uncertain pairs: choose one")
            if args.for_ppi:
                pairs = stratified_sample(rating_pairs(dataset, settings["eta"]), args.sample,
                                          settings["seed"])
            else:
                pairs = sample_pairs(rating_pairs(dataset, settings["eta"]), args.sample,
                                     settings["seed"], uncertain_share=args.uncertain_share)
            items = rating_items(dataset, pairs)
        else:
            if not args.reports:
                raise ValueError("the reports task needs --reports (rule rag_generate's "
                                 "results/rag/<dataset>/eta<eta>/reports/<system>.k<k>.jsonl)")
            if args.uncertain_share is not None or args.for_ppi:
                raise ValueError("--uncertain-share and --for-ppi sample the ratings task's "
                                 "pairs")
            items = report_items(dataset, read_reports(args.reports, dataset), settings["eta"],
                                 args.sample, settings["seed"])
        if not items:
            raise DataError("nothing to annotate: no topic has a kept sub-question at eta "
                            f"{settings['eta']}", path=args.dataset)
        queues = assign(len(items), args.annotators, settings["overlap"])
    except ValueError as exc:
        if isinstance(exc, DataError):
            raise
        raise SystemExit(f"cruxflow annotate: error: {exc}") from None
    settings["items"] = len(items)
    return Store.create(db, settings, items, queues)


def _open(args, db: Path):
    from cruxflow.annotate.store import Store

    store = Store(db)
    for key, value in _requested(args).items():
        if value is not None and value != store.settings.get(key):
            raise SystemExit(f"cruxflow annotate: error: {db} was made with {key} = "
                             f"{store.settings.get(key)!r}, not {value!r}: leave the option out "
                             f"to resume, or give another --db")
    return store


def items_line(store) -> str:
    """How many items, and why that is not the --sample N asked for: ratings items are
    passages, each with the sampled questions it was drawn for."""
    n_items = len(store.items)
    n_questions = sum(len(item.questions) for item in store.items.values())
    sample = store.settings.get("sample")
    if store.task == "ratings":
        drawn = f"--sample {sample} drew {n_questions}" if sample else f"all {n_questions}"
        return (f"{n_items} items ({drawn} (passage, question) pairs, grouped into one screen "
                "per passage)")
    if sample and sample > n_items:
        return (f"{n_items} items (--sample {sample}, but only {n_items} reports have a kept "
                "question)")
    return f"{n_items} items ({n_questions} questions)"


def _cmd_annotate(args) -> int:
    if args.db is None and args.task is None:
        raise SystemExit("cruxflow annotate: error: give --task (or --db of an existing "
                         "database)")
    db = args.db or Path(f"annotate-{args.task}.sqlite")
    if db.exists():
        store = _open(args, db)
    elif args.export is not None:
        raise SystemExit(f"cruxflow annotate: error: no database {db} to export")
    else:
        store = _create(args, db)
    if args.export is not None:
        from cruxflow.annotate.export import export

        summary = export(store, args.export)
        left = ", ".join(f"{n} {why}" for why, n in summary["left_out"].items()) or "none"
        print(f"wrote {summary['labels']} labels to {args.export / summary['file']} "
              f"({', '.join(f'{a}: {n}' for a, n in summary['by_annotator'].items())}); "
              f"left out: {left}; {kappa_line(summary['agreement'])}")
        return 0
    if args.review and store.task != "ratings":
        raise SystemExit("cruxflow annotate: error: --review shows the judge's passage "
                         "ratings: the ratings task only")
    from cruxflow.annotate.app import bind, make_app, serve

    if args.show_system and store.task != "reports":
        raise SystemExit("cruxflow annotate: error: --show-system names the system of each "
                         "report: the reports task only")
    # beyond loopback, the machine's own names are hosts a colleague's browser may use
    hosts = () if args.host in LOOPBACK else (socket.gethostname(), socket.getfqdn())
    app = make_app(store, review=args.review, show_system=args.show_system, hosts=hosts)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        raise SystemExit(f"cruxflow annotate: error: cannot listen on {args.host}:{args.port}: "
                         f"{exc.strerror}") from None
    host, port = sock.getsockname()[:2]
    root = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    mode = " in review mode (the judge's ratings shown)" if args.review else ""
    mode += " (systems shown)" if args.show_system else ""
    print(f"cruxflow annotate: {store.task}, {items_line(store)}, database {db}{mode}")
    for name, token in store.tokens.items():
        print(f"  {name}: {root}/a/{token}/  ({len(store.queues[name])} items)")
    print(f"  admin (progress, disagreements): {root}/admin/{store.admin_token}/")
    if args.host not in LOOPBACK:
        print(f"warning: listening on {args.host}: the links are secrets sent in clear text",
              file=sys.stderr)
    print("Ctrl-C stops the server; every label is stored the moment it is given.", flush=True)
    serve(app, sock)
    return 0


def kappa_line(agreement: dict) -> str:
    """Fleiss' kappa as the export prints it: for ratings the graded one beside the one at eta
    (two annotators who differ on every grade can agree on every side of eta)."""
    def num(value):
        return "n/a" if value is None else f"{value:.3f}"

    units = f"over {agreement['units']} shared questions"
    if "kappa_grades" in agreement:
        return (f"Fleiss' kappa {num(agreement['kappa_grades'])} on the six grades, "
                f"{num(agreement['kappa'])} at eta={agreement['eta']} (answerable or not), "
                f"{units}")
    return f"Fleiss' kappa {num(agreement['kappa'])} {units}"


def add_command(subparsers) -> None:
    """Add ``cruxflow annotate`` to the CLI's subparsers."""
    p = vocabulary.command(
        subparsers, "annotate",
        description="A small web app for the paper's two annotation tasks: ratings (0-5 "
                    "answerability of passage-question pairs on the judge's rubric) and reports "
                    "(is each sub-question answered by a RAG report). Each annotator gets a "
                    "personal link; every label is stored in SQLite at once; --export writes "
                    "the labels for `cruxflow agreement`. See docs/annotate.md.")
    add = partial(vocabulary.add, p)
    # The options that define a database stay None when not given, so that resuming one can
    # tell a change from an option left out (_open): their help shows the default they get.
    add("dataset", detail="here one with the judge's ratings (the ratings task needs its "
                          "passages too)")
    add("task")
    add("reports", detail="for the reports task")
    add("annotators")
    add("overlap")
    add("sample")
    add("uncertain-share")
    add("for-ppi", default=None, keep_unset=True)
    add("seed", default=None, keep_unset=True, detail="here the sample's")
    add("eta", default=None, keep_unset=True, detail="here it decides the kept sub-questions")
    add("db")
    add("review")
    add("show-system")
    add("export")
    add("host")
    add("port", default=8765, detail="0 picks a free one")
    p.set_defaults(func=_cmd_annotate)

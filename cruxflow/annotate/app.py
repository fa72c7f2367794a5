"""The annotation web app (Starlette, served by uvicorn): server-rendered pages, plain JavaScript.

Every annotator reaches the app through a personal link ``/a/<token>/``; the token is the only
credential and every request under it reads and writes that annotator's labels alone. The admin
link ``/admin/<token>/`` shows everyone's progress and the disagreements. Labels are sent one at
a time to ``/a/<token>/api/label`` and stored before the answer returns; ``api/items`` and
``api/labels`` give the annotator's queue and labels as JSON (docs/annotate.md, "The HTTP API").
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
from pathlib import Path

from cruxflow._extras import require

require(__name__, "annotate", "starlette", "uvicorn", "jinja2")

from starlette.applications import Starlette  # noqa: E402
from starlette.concurrency import run_in_threadpool  # noqa: E402
from starlette.exceptions import HTTPException  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.requests import ClientDisconnect, Request  # noqa: E402
from starlette.responses import JSONResponse, RedirectResponse, Response  # noqa: E402
from starlette.routing import Mount, Route  # noqa: E402
from starlette.staticfiles import StaticFiles  # noqa: E402
from starlette.templating import Jinja2Templates  # noqa: E402

from cruxflow.annotate.export import agreement, disagreements  # noqa: E402
from cruxflow.annotate.store import UNSET, LabelError, Span, Store  # noqa: E402
from cruxflow.data.errors import DataError  # noqa: E402

log = logging.getLogger(__name__)
from cruxflow.stages.prompts import RATING  # noqa: E402

HERE = Path(__file__).resolve().parent
LABEL_KEYS = {"item", "question", "value", "cannot_judge", "span"}
# A label is a few hundred bytes (a span's text is a passage's sentence or two): 16 KiB is room
# for the longest and refuses a flood from a leaked link before it is read.
MAX_BODY_BYTES = 16 * 1024
# Tokens are in the URLs: no Referer may carry them off, no other site may frame the pages
# (clickjacking), and nothing but the app's own script and style may run.
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; "
                                 b"img-src 'self' data:; connect-src 'self'; form-action 'self'; "
                                 b"base-uri 'none'; frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
]


class _BodyTooLarge(Exception):
    pass


def _host_name(value: str) -> str:
    """The host of a ``Host`` header or an origin's ``host[:port]`` (brackets of IPv6 off)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def refusal(scope, hosts: frozenset[str]) -> tuple[int, str] | None:
    """Why a request is refused before the app sees it (status, reason), or None.

    Every request: its ``Host`` must be an IP address, ``localhost`` or one of ``hosts`` (the
    machine's names when it listens beyond loopback): a page of another site whose name was
    made to point at this machine (DNS rebinding) is not served. A write (POST) must carry
    JSON (``Content-Type: application/json``: a form or a "simple" text/plain request of
    another site cannot) and, where the browser says where it comes from (``Origin``,
    ``Sec-Fetch-Site``), come from the app's own pages."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1")
               for k, v in scope.get("headers", [])}
    host = headers.get("host", "")
    name = _host_name(host)
    if not (name == "localhost" or _is_ip(name) or name in hosts):
        return 421, f"this server does not answer for the host {host!r}"
    if scope.get("method") != "POST":
        return None
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        return 415, "a label is sent as JSON (Content-Type: application/json)"
    origin = headers.get("origin")
    if origin is not None and origin.partition("://")[2].lower() != host.lower():
        return 403, f"a write from another site ({origin}) is refused"
    if headers.get("sec-fetch-site") not in (None, "same-origin", "none"):
        return 403, "a write from another site is refused"
    return None


class GuardMiddleware:
    """Security headers on every response; requests for another host, and writes that are
    no JSON or come from another site, refused (:func:`refusal`); request bodies over
    :data:`MAX_BODY_BYTES` answered 413 before the app reads them (by the declared length, or
    as the bytes arrive); and a client that goes away mid-request (a lying Content-Length, a
    closed tab) ends the request quietly rather than as a traceback in the server's log."""

    def __init__(self, app, hosts: frozenset[str] = frozenset()):
        self.app, self.hosts = app, frozenset(h.lower() for h in hosts)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if refused := refusal(scope, self.hosts):
            await _answer(send, *refused)
            return
        started = False

        async def send_guarded(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", []),
                                                  *SECURITY_HEADERS]}
            await send(message)

        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
            await _too_large(send_guarded)
            return
        received = 0

        async def receive_limited():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > MAX_BODY_BYTES:
                    raise _BodyTooLarge
            return message

        try:
            await self.app(scope, receive_limited, send_guarded)
        except _BodyTooLarge:
            if not started:
                await _too_large(send_guarded)
        except ClientDisconnect:
            pass  # nobody is left to answer


async def _too_large(send) -> None:
    await _answer(send, 413, f"request body over {MAX_BODY_BYTES} bytes")


async def _answer(send, status: int, error: str) -> None:
    body = json.dumps({"error": error}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})


def rubric() -> tuple[str, list[tuple[int, str]]]:
    """The judge's instruction and 0-5 guideline (Fig. 8): the very parts the rating prompt is
    built from (cruxflow/prompts/crux.toml), so the page shows what the LLM judge is told."""
    return RATING.parts["instruction"], [(int(g), text) for g, text in RATING.parts["rubric"]]


def _totals(rows: list[dict]) -> dict:
    keys = ("items", "items_done", "questions", "questions_done")
    return {k: sum(r[k] for r in rows) for k in keys}


def make_app(store: Store, *, review: bool = False, show_system: bool = False,
             hosts=()) -> Starlette:
    """The app over ``store``; ``review`` shows the judge's ratings beside the human ones and
    marks the labels given then as reviewed; ``show_system`` names the system that wrote each
    report (Task 1), which is hidden by default so that it cannot sway the labels. ``hosts``:
    the names (besides IP addresses and localhost) the app answers for."""
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    instruction, grades = rubric()

    def page(request: Request, name: str, status: int = 200, **context) -> Response:
        return templates.TemplateResponse(request, name, {
            "task": store.task, "review": review, "show_system": show_system, **context},
            status_code=status)

    def annotator_of(request: Request) -> str:
        name = store.annotator(request.path_params["token"])
        if name is None:
            raise HTTPException(403, "unknown annotator token: use the personal link you "
                                     "were given")
        return name

    def check_admin(request: Request) -> None:
        if not store.is_admin(request.path_params["token"]):
            raise HTTPException(403, "unknown admin token")

    def base(request: Request) -> str:
        return f"/a/{request.path_params['token']}"

    async def index(request: Request) -> Response:
        return page(request, "message.html", title="cruxflow annotate",
                    message="Open the personal link you were given.")

    async def home(request: Request) -> Response:
        name = annotator_of(request)
        pos = await run_in_threadpool(store.first_open_position, name)
        target = f"item/{pos}" if pos else "progress"
        return RedirectResponse(f"{base(request)}/{target}", status_code=303)

    async def progress(request: Request) -> Response:
        name = annotator_of(request)
        rows = await run_in_threadpool(store.progress, name)
        labels = {}
        for label in await run_in_threadpool(store.labels, name):
            if label.given:
                labels[label.item_id] = labels.get(label.item_id, 0) + 1
        items = [{"pos": pos, "item": store.items[i], "done": labels.get(i, 0)}
                 for pos, i in enumerate(store.queues[name], 1)]
        return page(request, "progress.html", annotator=name, rows=rows, totals=_totals(rows),
                    items=items, base=base(request))

    async def item_page(request: Request) -> Response:
        name = annotator_of(request)
        queue = store.queues[name]
        pos = request.path_params["pos"]
        if not 1 <= pos <= len(queue):
            raise HTTPException(404, f"no item {pos}: your queue has items 1 to {len(queue)}")
        item_id = queue[pos - 1]
        item = store.items[item_id]
        labels = await run_in_threadpool(store.labels, name, item_id)
        state = {
            "task": store.task, "review": review, "item": item_id, "pos": pos, "n": len(queue),
            "text": item.text,
            "questions": [{"index": q.index, "text": q.text,
                           **({"llm": q.llm} if review and q.llm is not None else {})}
                          for q in item.questions],
            "labels": {str(label.question): label.to_json() for label in labels},
            "api": f"{base(request)}/api/label",
            "prev": f"{base(request)}/item/{pos - 1}" if pos > 1 else None,
            "next": f"{base(request)}/item/{pos + 1}" if pos < len(queue) else
                    f"{base(request)}/progress",
        }
        return page(request, "item.html", annotator=name, item=item, pos=pos, n=len(queue),
                    state=state, instruction=instruction, grades=grades, base=base(request))

    async def api_label(request: Request) -> Response:
        name = annotator_of(request)
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise HTTPException(400, "the body must be a JSON object") from None
        except RecursionError:   # 8,000 '[' fit in the body limit
            raise HTTPException(400, "the body is nested too deeply: a label is a flat "
                                     "JSON object") from None
        if not isinstance(body, dict):
            raise HTTPException(400, "the body must be a JSON object")
        unknown = set(body) - LABEL_KEYS
        if unknown or not {"item", "question"} <= set(body) or len(body) < 3:
            raise HTTPException(400, "send item, question and one or more of value, "
                                     "cannot_judge, span" +
                                (f" (unknown: {', '.join(sorted(unknown))})" if unknown else ""))
        span = body.get("span", UNSET)
        if isinstance(span, dict):
            start, end, text = span.get("start"), span.get("end"), span.get("text")
            if not (isinstance(start, int) and isinstance(end, int) and isinstance(text, str)) \
                    or isinstance(start, bool) or isinstance(end, bool):
                raise HTTPException(400, "a span is {start: int, end: int, text: string}")
            span = Span(start, end, text)
        elif span is not UNSET and span is not None:
            raise HTTPException(400, "a span is {start: int, end: int, text: string} or null")
        label = await run_in_threadpool(
            lambda: store.save(name, body["item"], body["question"],
                               value=body.get("value", UNSET),
                               cannot_judge=body.get("cannot_judge"), span=span, review=review))
        return JSONResponse({"label": label.to_json()})

    async def api_items(request: Request) -> Response:
        """The annotator's queue as the item pages show it: what a script labels through
        ``api/label`` (docs/annotate.md, "The HTTP API")."""
        name = annotator_of(request)
        items = []
        for pos, item_id in enumerate(store.queues[name], 1):
            item = store.items[item_id]
            items.append({"pos": pos, "item": item_id, "topic_id": item.topic_id,
                          "target": item.target, "text": item.text,
                          "questions": [{"index": q.index, "text": q.text,
                                         **({"llm": q.llm} if review and q.llm is not None
                                            else {})} for q in item.questions]})
        return JSONResponse({"annotator": name, "task": store.task, "items": items})

    async def api_labels(request: Request) -> Response:
        name = annotator_of(request)
        labels = await run_in_threadpool(store.labels, name)
        return JSONResponse({"annotator": name, "labels": [x.to_json() for x in labels]})

    async def admin(request: Request) -> Response:
        check_admin(request)
        rows = await run_in_threadpool(store.progress)
        by_annotator: dict[str, list[dict]] = {}
        for row in rows:
            by_annotator.setdefault(row["annotator"], []).append(row)
        by_topic: dict[str, list[dict]] = {}
        for row in rows:
            by_topic.setdefault(row["topic_id"], []).append(row)
        return page(request, "admin.html", rows=rows,
                    annotators={a: _totals(r) for a, r in by_annotator.items()},
                    topics={t: _totals(r) for t, r in sorted(by_topic.items())},
                    settings=store.settings, token=request.path_params["token"])

    async def adjudicate(request: Request) -> Response:
        check_admin(request)
        found = await run_in_threadpool(disagreements, store)
        only_classes = request.query_params.get("classes") == "1"
        if only_classes:
            found = [d for d in found if d["classes_differ"]]
        return page(request, "adjudicate.html", found=found, only_classes=only_classes,
                    kappa=await run_in_threadpool(agreement, store),
                    token=request.path_params["token"])

    async def http_error(request: Request, exc: HTTPException) -> Response:
        if "/api/" in request.url.path:
            return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
        return page(request, "message.html", status=exc.status_code,
                    title=f"{exc.status_code}", message=exc.detail)

    async def label_error(request: Request, exc: LabelError) -> Response:
        if exc.status == 507:   # the disk is full: one line in the log, no traceback
            log.warning("cruxflow annotate: %s (507)", exc)
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    async def storage_error(request: Request, exc: DataError) -> Response:
        """The database cannot be read or written (a full disk: SQLite cannot grow its -shm
        file even to read): 507 and one line in the log, not a 500 and a traceback."""
        log.warning("cruxflow annotate: %s (507)", exc)
        if "/api/" in request.url.path:
            return JSONResponse({"error": str(exc)}, status_code=507)
        return page(request, "message.html", status=507, title="507",
                    message=f"The annotation database cannot be used now: {exc.reason}")

    routes = [
        Route("/", index),
        Route("/a/{token}/", home),
        Route("/a/{token}/progress", progress),
        Route("/a/{token}/item/{pos:int}", item_page),
        Route("/a/{token}/api/label", api_label, methods=["POST"]),
        Route("/a/{token}/api/items", api_items),
        Route("/a/{token}/api/labels", api_labels),
        Route("/admin/{token}/", admin),
        Route("/admin/{token}/adjudicate", adjudicate),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error,
                                                       LabelError: label_error,
                                                       DataError: storage_error},
                    middleware=[Middleware(GuardMiddleware, hosts=frozenset(hosts))])
    app.state.store = store
    return app


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: a free one), bound before the links are printed."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def serve(app: Starlette, sock: socket.socket) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM: uvicorn finishes the requests in flight)."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                           access_log=False))
    server.run(sockets=[sock])

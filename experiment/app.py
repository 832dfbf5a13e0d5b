"""The web app (FastAPI): one static page driven by a small JSON API over :class:`experiment.study.Study`.

Public endpoints (rate-limited per client address and per session token by :class:`RequestGuard`):
``GET /`` (the page), ``POST /api/session`` (platform ids → session token, keys, texts),
``POST /api/consent``, ``GET /api/next`` (state or next trial: an opaque id, never a label),
``GET /api/stimulus/{trial_id}`` (that trial's image, only while it is served and unanswered),
``GET /api/example/{n}`` (instruction examples, from the practice split), ``POST /api/response``.
Admin endpoints need ``Authorization: Bearer <admin token>``: ``GET /admin/status``, ``GET /admin/export``
(the trial table as CSV). The session token travels in the ``X-Session`` header, never in URLs.

Every request passes :class:`RequestGuard` (plain ASGI, in front of FastAPI) before anything parses it:
``/api/`` requests are counted against the rate limits first, valid or not (an invalid body, an oversized
one or a bad token all use a token), then the body is read up to ``max_body_bytes`` (default 64 KiB; the
API's bodies are a few hundred bytes) and refused with 413 beyond it: a declared ``Content-Length`` over the
cap before a byte of the body is read, a chunked body as soon as the cap is passed. So the server holds at
most the cap of any request body (a 400 MB body took the server from 245 MB to 1.47 GB before).
"""
import hmac
import json
import threading
import time
from collections import OrderedDict
from pathlib import Path

from fastapi import FastAPI, Header
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from .study import Study, StudyError

STATIC = Path(__file__).with_name("static")


class StartBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    participant: str | None = Field(default=None, max_length=128)
    study: str = Field(default="", max_length=128)
    session: str = Field(default="", max_length=128)

class ResponseBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trial_id: str = Field(max_length=64)
    key: str | None = Field(max_length=32)  # None = no answer before the deadline
    rt_ms: float


class RateLimiter:
    """Token buckets keyed by (scope, client): ``rate`` requests per second with bursts of ``burst``.
    In memory (one server process, as ``serve`` runs it); the oldest keys are forgotten beyond ``max_keys``."""

    def __init__(self, rate: float, burst: int, max_keys: int = 100_000):
        self.rate, self.burst, self.max_keys = float(rate), float(burst), max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, key: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.pop(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            ok = tokens >= 1.0
            self._buckets[key] = (tokens - 1.0 if ok else tokens, now)
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
            return ok


class RequestGuard:
    """ASGI middleware: the rate limits, then the request-body cap, before the application sees a request
    (module docstring). ``/api/session`` counts against ``sessions`` per client address; every other
    ``/api/`` path against ``api`` per ``X-Session`` token (per address without one). Refusals are the API's
    JSON errors (429, 413; 400 for a ``Content-Length`` that is not a number)."""

    def __init__(self, app, sessions: RateLimiter, api: RateLimiter, max_body_bytes: int):
        self.app, self.sessions, self.api, self.max_body = app, sessions, api, int(max_body_bytes)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or ())
        path = scope.get("path", "")
        if path.startswith("/api/"):
            client = scope["client"][0] if scope.get("client") else "?"
            token = headers.get(b"x-session", b"").decode("latin-1")
            limiter, key = ((self.sessions, f"ip:{client}") if path == "/api/session" else
                            (self.api, f"t:{token}" if token else f"ip:{client}"))
            if not limiter.allow(key):
                return await _refuse(send, 429, "too many requests; wait a moment")
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                n = int(declared)
            except ValueError:
                return await _refuse(send, 400, "invalid Content-Length header")
            if n > self.max_body:
                return await _refuse(send, 413, f"request body of {n} bytes is over the limit of {self.max_body} bytes")
        chunks, size = [], 0
        while True:  # the whole body, but never more than the cap
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return await _refuse(send, 413, f"request body over the limit of {self.max_body} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, replayed = b"".join(chunks), False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # later calls wait for the disconnect, as the server's own would

        return await self.app(scope, replay, send)


async def _refuse(send, status: int, message: str) -> None:
    data = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": data})


def create_app(study: Study, admin_token: str, limits: dict | None = None):
    """The FastAPI application serving ``study``. ``limits``: ``session_rate``/``session_burst`` (new
    sessions per second per client address), ``api_rate``/``api_burst`` (requests per second per
    session token) and ``max_body_bytes`` (largest request body accepted; :class:`RequestGuard`)."""
    lim = {"session_rate": 2.0, "session_burst": 20, "api_rate": 20.0, "api_burst": 40, "max_body_bytes": 65536,
           **(limits or {})}
    sessions = RateLimiter(lim["session_rate"], lim["session_burst"])
    api = RateLimiter(lim["api_rate"], lim["api_burst"])
    app = FastAPI(title=f"Vantage experiment {study.design.name}", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.study = study
    app.add_middleware(RequestGuard, sessions=sessions, api=api, max_body_bytes=lim["max_body_bytes"])

    @app.exception_handler(StudyError)
    def _study_error(_request, exc: StudyError):
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    def _invalid(_request, exc: RequestValidationError):
        msgs = "; ".join(f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg')}" for e in exc.errors()[:5])
        return JSONResponse({"error": f"invalid request ({msgs})"}, status_code=422)

    @app.get("/", response_class=HTMLResponse)
    def index():
        page = (STATIC / "index.html").read_text().replace(
            "__URL_PARAMS__", json.dumps(study.design.url_params).replace("<", "\\u003c"))
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    @app.get("/static/{name}")
    def static(name: str):
        if name not in ("app.js", "style.css"):
            raise StudyError(f"{name}: not found", 404)
        return FileResponse(STATIC / name)

    @app.post("/api/session")
    def start(body: StartBody):
        return study.start(body.participant, body.study, body.session)

    @app.post("/api/consent")
    def consent(x_session: str | None = Header(default=None)):
        study.consent(x_session or "")
        return {"ok": True}

    @app.get("/api/next")
    def next_trial(x_session: str | None = Header(default=None)):
        return study.next_trial(x_session or "")

    @app.get("/api/stimulus/{trial_id}")
    def stimulus(trial_id: str, x_session: str | None = Header(default=None)):
        path = study.stimulus(x_session or "", trial_id)
        # why: a neutral name and no caching, so neither the URL nor headers say which image it is
        return FileResponse(path, media_type="image/png" if path.suffix.lower() == ".png" else None,
                            headers={"Cache-Control": "no-store", "Content-Disposition": "inline"})

    @app.get("/api/example/{index}")
    def example(index: int):
        return FileResponse(study.example(index), headers={"Cache-Control": "no-store"})

    @app.post("/api/response")
    def respond(body: ResponseBody, x_session: str | None = Header(default=None)):
        return study.record(x_session or "", body.trial_id, body.key, body.rt_ms)

    def _admin(authorization: str | None):
        given = (authorization or "").removeprefix("Bearer ").strip()
        if not given or not hmac.compare_digest(given.encode(), admin_token.encode()):
            raise StudyError("admin endpoints need Authorization: Bearer <admin token>", 401)

    @app.get("/admin/status")
    def status(authorization: str | None = Header(default=None)):
        _admin(authorization)
        return study.status()

    @app.get("/admin/export")
    def export(authorization: str | None = Header(default=None), include_incomplete: bool = False):
        from .export import trial_table

        _admin(authorization)
        df = trial_table(study.engine, study.design.name, include_incomplete=include_incomplete)
        return Response(df.to_csv(index=False), media_type="text/csv")

    return app

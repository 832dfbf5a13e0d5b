"""A local HTTP server on 127.0.0.1 speaking the OpenAI, Anthropic and Gemini wire formats (the paths and
JSON bodies of eval/vlm/providers.py), for tests, benchmarks and offline demos. Not a model: it answers
from a script.

* ``answer(image_sha256, provider) -> str``: the reply text for the request's last image (default ``"YES"``);
* ``script``: a FIFO of behaviours consumed one per request before normal answers — ``{"status": 429,
  "retry_after": 1}``, ``{"status": 500}``, ``{"sleep": 2.0}`` (answer late: a client timeout),
  ``{"malformed": True}`` (a 200 with a body that is not JSON), ``{"refuse": True}`` (the provider's
  refusal form), ``{"text": "..."}`` (this reply), ``{"empty": True}`` (Gemini: a 200 with no candidates and
  no block reason), ``{"blocked": True}`` (Gemini: the prompt blocked, no candidates);
* ``delay``: seconds added to every reply;
* every request is recorded (``requests``: provider, path, headers, parsed JSON body, time).

Use as a context manager: ``with FakeVLMServer() as srv: srv.url`` (``srv.openai_base`` = ``<url>/v1``).
"""
from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _last_image_b64(provider: str, body: dict) -> str | None:
    if provider == "openai":
        msgs = body.get("messages", [])
        parts = msgs[-1].get("content", []) if msgs else []
        urls = [p["image_url"]["url"] for p in parts if isinstance(p, dict) and p.get("type") == "image_url"]
        return urls[-1].split(",", 1)[1] if urls else None
    if provider == "anthropic":
        msgs = body.get("messages", [])
        parts = msgs[-1].get("content", []) if msgs else []
        data = [p["source"]["data"] for p in parts if isinstance(p, dict) and p.get("type") == "image"]
        return data[-1] if data else None
    contents = body.get("contents", [])
    parts = contents[-1].get("parts", []) if contents else []
    data = [(p.get("inlineData") or p.get("inline_data"))["data"] for p in parts
            if isinstance(p, dict) and (p.get("inlineData") or p.get("inline_data"))]
    return data[-1] if data else None


def image_sha256_b64(b64: str) -> str:
    # google-genai sends URL-safe base64 without padding; OpenAI and Anthropic the standard alphabet
    s = b64.replace("-", "+").replace("_", "/")
    return hashlib.sha256(base64.b64decode(s + "=" * (-len(s) % 4))).hexdigest()


class FakeVLMServer:
    def __init__(self, answer=None, delay: float = 0.0):
        self.answer = answer or (lambda sha, provider: "YES")
        self.delay = delay
        self.script: deque = deque()
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._server = None

    # -------------------------------------------------------------------------------- lifecycle
    def __enter__(self) -> "FakeVLMServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                server._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def openai_base(self) -> str:
        return self.url + "/v1"

    def count(self, provider: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if provider is None or r["provider"] == provider)

    # ---------------------------------------------------------------------------------- replies
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        n = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(n)
        path = h.path.split("?", 1)[0]
        provider = ("openai" if path.endswith("/chat/completions") else "anthropic" if path.endswith("/messages")
                    else "gemini" if path.endswith(":generateContent") else None)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        with self._lock:
            self.requests.append({"provider": provider, "path": path, "headers": dict(h.headers.items()),
                                  "body": body, "time": time.time()})
            step = self.script.popleft() if self.script else {}
        if provider is None:
            return self._send(h, 404, {"error": {"message": f"no such endpoint {path}"}})
        if self.delay:
            time.sleep(self.delay)
        if "sleep" in step:
            time.sleep(step["sleep"])
        if "status" in step:
            headers = {"Retry-After": str(step["retry_after"])} if "retry_after" in step else {}
            err = {"error": {"message": "scripted error", "type": "rate_limit_error" if step["status"] == 429
                             else "api_error", "code": step["status"], "status": "UNAVAILABLE"}}
            if provider == "anthropic":
                err = {"type": "error", "error": {"type": "api_error", "message": "scripted error"}}
            return self._send(h, step["status"], err, headers)
        if step.get("malformed"):
            return self._send_raw(h, 200, b'{"choices": [ this is not json', "application/json")
        if provider == "gemini" and (step.get("empty") or step.get("blocked")):
            usage = {"promptTokenCount": 100, "totalTokenCount": 100}
            feedback = {"promptFeedback": {"blockReason": "SAFETY"}} if step.get("blocked") else {}
            return self._send(h, 200, {"usageMetadata": usage, **feedback})
        b64 = _last_image_b64(provider, body)
        sha = image_sha256_b64(b64) if b64 else ""
        text = step.get("text") if "text" in step else self.answer(sha, provider)
        model = body.get("model") or path.rsplit("/", 1)[-1].split(":", 1)[0]
        usage_in, usage_out = 100 + 10 * len(json.dumps(body)) // 1000, 2
        self._send(h, 200, self._reply(provider, model, text, bool(step.get("refuse")), usage_in, usage_out))

    @staticmethod
    def _reply(provider: str, model: str, text: str, refuse: bool, tin: int, tout: int) -> dict:
        if provider == "openai":
            msg = {"role": "assistant", "content": None if refuse else text,
                   "refusal": "I'm sorry, I can't help with that." if refuse else None}
            return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                    "choices": [{"index": 0, "message": msg, "finish_reason": "stop", "logprobs": None}],
                    "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout}}
        if provider == "anthropic":
            return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                    "content": [] if refuse else [{"type": "text", "text": text}],
                    "stop_reason": "refusal" if refuse else "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": tin, "output_tokens": tout}}
        if refuse:
            cand = {"finishReason": "SAFETY", "index": 0, "content": {"role": "model", "parts": []}}
        else:
            cand = {"finishReason": "STOP", "index": 0, "content": {"role": "model", "parts": [{"text": text}]}}
        return {"candidates": [cand], "usageMetadata": {"promptTokenCount": tin, "candidatesTokenCount": tout,
                                                        "totalTokenCount": tin + tout}, "modelVersion": model}

    @staticmethod
    def _send(h, status: int, obj: dict, headers: dict | None = None) -> None:
        FakeVLMServer._send_raw(h, status, json.dumps(obj).encode(), "application/json", headers)

    @staticmethod
    def _send_raw(h, status: int, data: bytes, ctype: str, headers: dict | None = None) -> None:
        try:
            h.send_response(status)
            h.send_header("Content-Type", ctype)
            h.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            pass

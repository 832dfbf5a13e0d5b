"""The response cache: one JSON file per request, keyed by what determines the reply.

Key = sha256 of the canonical JSON of: provider, model, the full conversation with every image replaced by
the sha256 of its bytes (and its MIME type), temperature, max tokens, seed, the repeat index and the
conversation template version (eval/vlm/prompts.py ``TEMPLATE_VERSION``). Not in the key: the API key
(never stored anywhere), the server address (an OpenAI-compatible server is identified by its model name),
timeouts and retry settings. Only successful replies are stored — an error is never cached, so a re-run
retries it. Files are written atomically (temporary name + rename), so a killed run leaves complete entries
only, and resuming re-sends exactly the requests that have no entry.

Layout: ``<cache_dir>/<key[:2]>/<key>.json`` with ``key_fields`` (the key's inputs, images as hashes),
``text``, ``refused``, ``input_tokens``, ``output_tokens``, ``finish``, ``created``.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid
from pathlib import Path

from infra.files import cache_dir

from .providers import Reply, Request


def default_cache_dir() -> Path:
    return cache_dir("vlm")


def request_key_fields(provider: str, model: str, req: Request, repeat: int = 0) -> dict:
    from .prompts import TEMPLATE_VERSION

    return {"provider": provider, "model": model, "conversation": req.conversation.key_form(),
            "temperature": float(req.temperature), "max_tokens": int(req.max_tokens), "seed": req.seed,
            "repeat": int(repeat), "template": TEMPLATE_VERSION}


def request_key(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class ResponseCache:
    """Thread-safe get/put of replies by key (see module docstring)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Reply | None:
        p = self._path(key)
        try:
            d = json.loads(p.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return Reply(d["text"], bool(d["refused"]), int(d["input_tokens"]), int(d["output_tokens"]), d["finish"])

    def put(self, key: str, fields: dict, reply: Reply) -> None:
        p = self._path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        d = {"key_fields": fields, "text": reply.text, "refused": reply.refused, "input_tokens": reply.input_tokens,
             "output_tokens": reply.output_tokens, "finish": reply.finish, "created": time.time()}
        tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp")  # unique per thread and process
        tmp.write_text(json.dumps(d, sort_keys=True))
        os.replace(tmp, p)

    def __len__(self) -> int:
        return sum(1 for _ in self.folder.glob("*/*.json")) if self.folder.is_dir() else 0

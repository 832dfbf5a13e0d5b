"""VLM providers through their official Python SDKs: ``openai`` (and any OpenAI-compatible server: vLLM,
Ollama, OpenRouter... via ``base_url``, which must include ``/v1``), ``anthropic`` and ``gemini``
(``google-genai``). Registered with :func:`register_provider`; contract :class:`Provider`.

Keys come only from environment variables (``api_key_env``, default ``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``); they are handed to the SDK client and never stored, logged,
digested or cached. The SDKs' own retries are switched off (``max_retries=0``): the runner retries with
its own exponential backoff and honours ``Retry-After`` (eval/vlm/run.py), so retries are counted against
the request budget.

Wire formats (what the fake server of the tests speaks, eval/vlm/fake_server.py):

* OpenAI ``POST {base}/chat/completions``: ``messages`` = user turns with content parts
  ``{"type": "text"}`` and ``{"type": "image_url", "image_url": {"url": "data:<mime>;base64,<data>"}}``,
  assistant turns with the answer string; ``temperature``, ``max_tokens``, ``seed``.
* Anthropic ``POST {base}/v1/messages``: content blocks ``{"type": "text"}`` and ``{"type": "image",
  "source": {"type": "base64", "media_type": <mime>, "data": <data>}}``; ``system``, ``temperature``,
  ``max_tokens`` (no seed).
* Gemini ``POST {base}/v1beta/models/<model>:generateContent``: ``contents`` with roles ``user``/``model``
  and parts ``{"text"}`` / ``{"inlineData": {"mimeType", "data"}}``; ``generationConfig`` with
  ``temperature``, ``maxOutputTokens``, ``seed``. A reply whose prompt was blocked (``promptFeedback.
  blockReason``) or whose candidate stopped for safety is a refusal; a 200 with no candidates and no block
  reason is a transient error (retried, not cached).
"""
from __future__ import annotations

import base64
import email.utils
import os
import time
from dataclasses import dataclass
from typing import Callable

from infra.registry import Registry, where

from .prompts import Conversation, Image

DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}


class ProviderError(Exception):
    """A failed request: ``status`` (HTTP code, or ``timeout``/``connection``/``malformed``), whether it is
    worth retrying, and the server's ``Retry-After`` in seconds (None when absent)."""

    def __init__(self, message: str, status: str, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.status, self.retryable, self.retry_after = status, retryable, retry_after


@dataclass(frozen=True)
class Reply:
    text: str | None
    refused: bool
    input_tokens: int
    output_tokens: int
    finish: str


@dataclass(frozen=True)
class Request:
    conversation: Conversation
    temperature: float
    max_tokens: int
    seed: int | None


@dataclass(frozen=True)
class Provider:
    """``make_client(key, base_url, timeout_s, model)`` -> client; ``send(client, model, request)`` ->
    :class:`Reply` (raises :class:`ProviderError`). ``needs_key``: reads an API key from the environment;
    ``local``: runs in this process (one request at a time; the model name is a folder whose content digest
    joins the cache key)."""

    name: str
    make_client: Callable
    send: Callable
    needs_key: bool = True
    local: bool = False


PROVIDERS: Registry[Provider] = Registry("VLM provider", origin=lambda p: where(p.send))


def register_provider(name: str, make_client: Callable, needs_key: bool = True, local: bool = False):
    def deco(send):
        PROVIDERS.register(name, Provider(name, make_client, send, needs_key, local))
        return send

    return deco


def parse_vlm_model(model: str) -> tuple[str, str]:
    """``<provider>:<model name>`` -> (provider, model name); an unknown provider lists the known ones."""
    prov, _, name = str(model).partition(":")
    if prov not in PROVIDERS or not name:
        raise ValueError(f"model={model!r}: expected <provider>:<model> with provider one of "
                         f"{', '.join(sorted(PROVIDERS))} (e.g. openai:gpt-4o, anthropic:claude-3-opus-20240229, "
                         "gemini:gemini-1.5-pro, hf:<folder of an image-text-to-text model>)")
    return prov, name


def api_key(provider: str, env_name: str | None, base_url: str | None) -> str:
    """The key from the environment variable ``env_name`` (default per provider). A local server
    (``base_url`` set) may run without one: the SDKs then send a placeholder."""
    if not PROVIDERS[provider].needs_key:
        return ""
    env_name = env_name or DEFAULT_KEY_ENV[provider]
    key = os.environ.get(env_name, "")
    if not key and not base_url:
        raise ValueError(f"{provider}: no API key; set the environment variable {env_name} "
                         "(keys are read only from the environment)")
    return key or "no-key"


def retry_after_seconds(headers) -> float | None:
    """``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date) from response headers, else None."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        when = email.utils.parsedate_to_datetime(ra)
        return max(0.0, when.timestamp() - time.time()) if when else None


def _status_error(status: int, message: str, headers) -> ProviderError:
    retryable = status in (408, 409, 429) or status >= 500
    return ProviderError(f"HTTP {status}: {message[:200]}", str(status), retryable, retry_after_seconds(headers))


def _accepts(fn, name: str) -> bool:
    import inspect

    return name in inspect.signature(fn).parameters


# A body the SDK cannot parse: invalid JSON (JSONDecodeError is a ValueError), a schema mismatch (pydantic's
# ValidationError is a ValueError), a missing field. Programming errors (TypeError...) are not retried.
_MALFORMED = (ValueError, KeyError)


def _b64(img: Image) -> str:
    return base64.b64encode(img.data).decode("ascii")


# ------------------------------------------------------------------------------------------------ openai
def _openai_client(key: str, base_url: str | None, timeout_s: float, model: str = ""):
    import openai

    return openai.OpenAI(api_key=key, base_url=base_url or None, max_retries=0, timeout=timeout_s)


def openai_messages(conv: Conversation) -> list[dict]:
    msgs = [{"role": "system", "content": conv.system}] if conv.system else []
    for t in conv.turns:
        if t.role == "assistant":
            msgs.append({"role": "assistant", "content": "".join(p for p in t.parts if isinstance(p, str))})
            continue
        content = [{"type": "text", "text": p} if isinstance(p, str) else
                   {"type": "image_url", "image_url": {"url": f"data:{p.mime};base64,{_b64(p)}"}} for p in t.parts]
        msgs.append({"role": "user", "content": content})
    return msgs


def _sdk_call(sdk, call):
    """``call()``, with the exceptions of an OpenAI or Anthropic SDK (``sdk``: the imported module; both
    generated by Stainless, with the same exception classes) mapped to :class:`ProviderError`: HTTP status by
    :func:`_status_error`, timeouts and connection failures retryable, malformed responses retryable."""
    try:
        return call()
    except sdk.APIStatusError as e:
        raise _status_error(e.status_code, str(e), e.response.headers) from None
    except sdk.APITimeoutError:
        raise ProviderError("timed out", "timeout", True) from None
    except sdk.APIConnectionError as e:
        raise ProviderError(f"connection failed: {e}", "connection", True) from None
    except (sdk.APIResponseValidationError, *_MALFORMED) as e:
        raise ProviderError(f"malformed response ({type(e).__name__}: {str(e)[:200]})", "malformed", True) from None


@register_provider("openai", _openai_client)
def _openai_send(client, model: str, req: Request) -> Reply:
    import openai

    kw = {"seed": req.seed} if req.seed is not None else {}
    r = _sdk_call(openai, lambda: client.chat.completions.create(
        model=model, messages=openai_messages(req.conversation), temperature=req.temperature,
        max_tokens=req.max_tokens, **kw))
    try:
        msg = r.choices[0].message
        usage = r.usage
        refusal = getattr(msg, "refusal", None)
        return Reply(msg.content, bool(refusal), int(getattr(usage, "prompt_tokens", 0) or 0),
                     int(getattr(usage, "completion_tokens", 0) or 0), str(r.choices[0].finish_reason or ""))
    except (AttributeError, IndexError, TypeError) as e:
        raise ProviderError(f"malformed response ({type(e).__name__}: {e})", "malformed", True) from None


# --------------------------------------------------------------------------------------------- anthropic
def _anthropic_client(key: str, base_url: str | None, timeout_s: float, model: str = ""):
    import anthropic

    return anthropic.Anthropic(api_key=key, base_url=base_url or None, max_retries=0, timeout=timeout_s)


def anthropic_messages(conv: Conversation) -> list[dict]:
    msgs = []
    for t in conv.turns:
        if t.role == "assistant":
            msgs.append({"role": "assistant", "content": "".join(p for p in t.parts if isinstance(p, str))})
            continue
        content = [{"type": "text", "text": p} if isinstance(p, str) else
                   {"type": "image", "source": {"type": "base64", "media_type": p.mime, "data": _b64(p)}}
                   for p in t.parts]
        msgs.append({"role": "user", "content": content})
    return msgs


@register_provider("anthropic", _anthropic_client)
def _anthropic_send(client, model: str, req: Request) -> Reply:
    import anthropic

    kw = {"system": req.conversation.system} if req.conversation.system else {}
    if _accepts(client.messages.create, "temperature"):
        kw["temperature"] = req.temperature
    else:  # SDK 2.x dropped the keyword; the Messages API still takes the field for the models that have it
        kw["extra_body"] = {"temperature": req.temperature}
    r = _sdk_call(anthropic, lambda: client.messages.create(
        model=model, messages=anthropic_messages(req.conversation), max_tokens=req.max_tokens, **kw))
    try:
        text = "".join(b.text for b in r.content if getattr(b, "type", "") == "text")
        return Reply(text, r.stop_reason == "refusal", int(r.usage.input_tokens or 0),
                     int(r.usage.output_tokens or 0), str(r.stop_reason or ""))
    except (AttributeError, TypeError) as e:
        raise ProviderError(f"malformed response ({type(e).__name__}: {e})", "malformed", True) from None


# ------------------------------------------------------------------------------------------------ gemini
def _gemini_client(key: str, base_url: str | None, timeout_s: float, model: str = ""):
    from google import genai
    from google.genai import types

    opts = types.HttpOptions(base_url=base_url or None, timeout=int(timeout_s * 1000))
    return genai.Client(api_key=key, http_options=opts)


def gemini_contents(conv: Conversation) -> list:
    from google.genai import types

    out = []
    for t in conv.turns:
        parts = [types.Part.from_text(text=p) if isinstance(p, str) else types.Part.from_bytes(data=p.data, mime_type=p.mime)
                 for p in t.parts]
        out.append(types.Content(role="model" if t.role == "assistant" else "user", parts=parts))
    return out


def _transport_errors(name: str) -> tuple:
    """``name`` from each HTTP client library google-genai may use (httpx, or its fork httpx2)."""
    import importlib

    out = []
    for mod in ("httpx", "httpx2"):
        try:
            out.append(getattr(importlib.import_module(mod), name))
        except (ImportError, AttributeError):
            pass
    return tuple(out)


_GEMINI_BLOCKED = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}


@register_provider("gemini", _gemini_client)
def _gemini_send(client, model: str, req: Request) -> Reply:
    from google.genai import errors, types

    cfg = types.GenerateContentConfig(temperature=req.temperature, max_output_tokens=req.max_tokens,
                                      seed=req.seed, system_instruction=req.conversation.system)
    try:
        r = client.models.generate_content(model=model, contents=gemini_contents(req.conversation), config=cfg)
    except errors.APIError as e:
        headers = getattr(getattr(e, "response", None), "headers", None)
        raise _status_error(int(e.code or 0), str(e), headers) from None
    except _transport_errors("TimeoutException"):
        raise ProviderError("timed out", "timeout", True) from None
    except _transport_errors("TransportError") as e:
        raise ProviderError(f"connection failed: {e}", "connection", True) from None
    except _MALFORMED as e:
        raise ProviderError(f"malformed response ({type(e).__name__}: {str(e)[:200]})", "malformed", True) from None
    usage = r.usage_metadata
    tin = int(getattr(usage, "prompt_token_count", 0) or 0) if usage else 0
    tout = int(getattr(usage, "candidates_token_count", 0) or 0) if usage else 0
    blocked = bool(r.prompt_feedback and r.prompt_feedback.block_reason)
    if not r.candidates:
        if blocked:  # the prompt itself was blocked: the provider's refusal, an answer like any other
            return Reply(None, True, tin, tout, "blocked")
        # a 200 with neither candidates nor a block reason says nothing about the question: a transient
        # failure (retried, never cached), not a refusal that would be cached and counted forever
        raise ProviderError("200 reply with no candidates and no block reason", "no_candidates", True)
    cand = r.candidates[0]
    finish = str(getattr(cand.finish_reason, "value", cand.finish_reason) or "")
    parts = (cand.content.parts or []) if cand.content else []
    text = "".join(p.text for p in parts if getattr(p, "text", None))
    return Reply(text, blocked or finish in _GEMINI_BLOCKED, tin, tout, finish)


# -------------------------------------------------------------------------------- hf (local transformers)
@dataclass
class LocalModel:
    model: object
    processor: object
    lock: object


def _hf_client(key: str, base_url: str | None, timeout_s: float, model: str = ""):
    """An image-text-to-text model and its processor (with a chat template) from a local folder."""
    import threading
    from pathlib import Path

    from transformers import AutoModelForImageTextToText, AutoProcessor

    if not Path(model).is_dir():
        raise ValueError(f"model=hf:{model}: no such folder (a transformers image-text-to-text model saved with "
                         "save_pretrained, with its processor and chat template)")
    try:
        proc = AutoProcessor.from_pretrained(model, local_files_only=True)
        net = AutoModelForImageTextToText.from_pretrained(model, local_files_only=True).eval()
    except (OSError, ValueError, KeyError) as e:
        raise ValueError(f"model=hf:{model}: cannot load an image-text-to-text model: {e}") from None
    if not getattr(proc, "chat_template", None):
        raise ValueError(f"model=hf:{model}: the processor has no chat template; add chat_template.jinja")
    return LocalModel(net, proc, threading.Lock())


def hf_messages(conv: Conversation) -> tuple[list[dict], list]:
    """Chat-template messages (``{"type": "image"}`` placeholders) and the PIL images in order."""
    import io

    from PIL import Image as PILImage

    msgs, images = [], []
    if conv.system:
        msgs.append({"role": "system", "content": [{"type": "text", "text": conv.system}]})
    for t in conv.turns:
        content = []
        for p in t.parts:
            if isinstance(p, str):
                content.append({"type": "text", "text": p})
            else:
                content.append({"type": "image"})
                images.append(PILImage.open(io.BytesIO(p.data)).convert("RGB"))
        msgs.append({"role": t.role, "content": content})
    return msgs, images


@register_provider("hf", _hf_client, needs_key=False, local=True)
def _hf_send(client: LocalModel, model: str, req: Request) -> Reply:
    """Greedy decoding at temperature 0, else sampling at the temperature with ``torch.manual_seed(seed)``."""
    import torch

    msgs, images = hf_messages(req.conversation)
    with client.lock:  # one generation at a time: the model is shared by the pool's threads
        text = client.processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        inputs = client.processor(images=images or None, text=text, return_tensors="pt")
        kw = {"do_sample": False}
        if req.temperature > 0:
            kw = {"do_sample": True, "temperature": float(req.temperature)}
            torch.manual_seed(int(req.seed or 0))
        with torch.no_grad():
            out = client.model.generate(**inputs, max_new_tokens=req.max_tokens, **kw)
        n_in = int(inputs["input_ids"].shape[1])
        new = out[0, n_in:]
        reply = client.processor.decode(new, skip_special_tokens=True)
    return Reply(reply, False, n_in, int(new.shape[0]), "length" if new.shape[0] >= req.max_tokens else "stop")

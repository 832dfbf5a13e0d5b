"""Vision-language models prompted through their APIs (OpenAI and compatible servers, Anthropic, Gemini) with
the 3D-PC paper's protocol; results in the one trial schema.

* :mod:`.prompts` — prompt sets (the paper's, and adapted to Vantage's green camera), conversations;
* :mod:`.parse` — answer parsing rules and counts;
* :mod:`.providers` — the SDK calls per provider (registry), keys from the environment only;
* :mod:`.cache` — the response cache (never errors);
* :mod:`.run` — the ``vlm`` method: in-context protocol, concurrency, retries, budget, cost, best-3 summary;
* :mod:`.fake_server` — a local HTTP server speaking the three wire formats (tests, benchmarks).
"""
from __future__ import annotations

from .run import PAPER_TEMPERATURES, RequestSettings, VLMConfig, VLMMethod, protocol_summary, run_vlm  # noqa: F401

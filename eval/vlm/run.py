"""VLM prompting as an evaluation method (``vlm``), with the 3D-PC protocol as the default.

Protocol (3D-PC appendix A.6): ``shots`` = 20 training images with their correct answers as in-context
examples (user/assistant turns), then the test image; the examples are drawn from the task's ``train``
split by the run seed, balanced over classes and shuffled, and are the same for every test image of a run.
``shots=0`` is the zero-shot variant, ``reasoning=cot`` the chain-of-thought variant (the test question asks
for step-by-step reasoning and a final ``Answer: <token>`` line; ``max_tokens`` grows accordingly).
One run = one (temperature, seed); the paper swept temperatures 0.0-0.7 in steps of 0.1 and reported the
mean of the best 3 runs: :func:`protocol_summary` gives that figure **and** the mean over all runs (the
honest one: picking the best 3 of 8 on the test set is optimistic).

Requests (:class:`Dispatcher`): a response cache (eval/vlm/cache.py) is consulted first; identical requests
of one run (an image in two evaluation splits) are sent once; misses go to a thread pool of at most
``concurrency`` requests in flight; a failed attempt is retried with exponential backoff
``min(backoff_max_s, backoff_s * 2**attempt)``, or after the server's ``Retry-After`` when it sent one,
for 429, 408/409, 5xx, timeouts, dropped connections and malformed bodies (other 4xx fail at once).
Every attempt counts against ``max_requests`` (the per-invocation budget). When any reply is missing at the
end (budget spent, retries exhausted) the run writes nothing and pauses: ``run_method`` returns None and the
same command resumes from the cache. Cost = tokens reported by the provider x the configured prices.

Trials: ``response`` = the parsed class or None (refusal / unparseable: counted as errors, never dropped),
``score`` = 1.0 for a parsed reply (no probabilities from an API), NaN otherwise. The summary row carries the
parse counts (``n_exact``, ``n_alias``, ``n_refusal``, ``n_unparseable``), ``temperature``, ``requests``
(HTTP attempts this invocation), ``cache_hits``, tokens and ``cost_usd``; ``vlm/<run_id>.parquet`` in the
results folder holds every raw reply with its parse kind and cache key.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from infra import schema as S

from ..runner import Method, SeedResult, register_method
from .cache import ResponseCache, request_key, request_key_fields
from .parse import KINDS, parse_answer
from .prompts import Image, PromptSet, in_context_conversation, prompt_set_for
from .providers import PROVIDERS, ProviderError, Reply, Request, api_key, parse_vlm_model

log = logging.getLogger(__name__)

PAPER_TEMPERATURES = tuple(round(0.1 * i, 1) for i in range(8))  # 0.0 ... 0.7


@dataclass(frozen=True)
class VLMConfig:
    """What determines the replies (all of it in the run's digest). Declared and checked with ``infra.schema``
    (errors name ``vlm.<field>``)."""

    prompt_set: str = S.field("auto", "auto (= 3dpc_camera for 3D-PC tasks) | 3dpc_camera | 3dpc_paper")
    question: str | None = S.field(None, "a custom question (with ``answers``) for any task")
    answers: dict | None = S.field(None, "class name -> answer token")
    aliases: dict | None = S.field(None, "answer token -> words meaning it")
    system: str | None = S.field(None, "system prompt")
    shots: int = S.field(20, "in-context examples", check=S.at_least(0))
    reasoning: str = S.field("direct", "direct or cot", choices=("direct", "cot"))
    temperature: float = S.field(0.0, "sampling temperature", check=S.between(0.0, 2.0))
    max_tokens: int | None = S.field(None, "None = 16 (direct) / 1024 (cot)", check=(lambda v: v >= 1, "null or >= 1"))
    repeat: int = S.field(0, "another sample of the same request (a distinct cache entry)", check=S.at_least(0))
    seeds: tuple[int, ...] = S.field((0,), "run seeds (example choice, local sampling)",
                                     check=S.non_empty("at least one seed"))
    n_boot: int = S.field(10_000, "bootstrap resamples of the CIs", check=S.at_least(100))
    ci: float = S.field(0.95, "confidence level", check=S.between(0, 1, "()"))

    def __post_init__(self):
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        S.validate_section(self, "vlm")

    @property
    def tokens(self) -> int:
        return self.max_tokens or (1024 if self.reasoning == "cot" else 16)


@dataclass(frozen=True)
class RequestSettings:
    """How requests are sent (not in the digest: they do not change a reply). Checked with ``infra.schema``
    (errors name ``requests.<field>``)."""

    base_url: str | None = S.field(None, "the provider's server address (None = the SDK's default)")
    api_key_env: str | None = S.field(None, "environment variable holding the key (None = the provider's usual one)")
    concurrency: int = S.field(8, "requests in flight", check=S.at_least(1))
    max_retries: int = S.field(6, "retries of a failed request", check=S.at_least(0))
    backoff_s: float = S.field(1.0, "first retry delay (s), doubled per retry", check=S.at_least(0))
    backoff_max_s: float = S.field(60.0, "longest retry delay (s)", check=S.at_least(0))
    timeout_s: float = S.field(60.0, "per-request timeout (s)", check=S.above(0))
    max_requests: int | None = S.field(None, "budget of HTTP attempts per invocation (None = unlimited)",
                                       check=S.at_least(0))
    price_in_per_mtok: float | None = S.field(None, "USD per million input tokens")
    price_out_per_mtok: float | None = S.field(None, "USD per million output tokens")
    cache_dir: str | None = S.field(None, "reply cache folder")

    def __post_init__(self):
        S.validate_section(self, "requests")


@dataclass
class Outcome:
    reply: Reply | None
    cached: bool
    error: str = ""


class Dispatcher:
    """Cache, concurrency limit, retries with backoff and Retry-After, request budget (module docstring)."""

    def __init__(self, provider: str, model: str, settings: RequestSettings, cache: ResponseCache,
                 sleep=time.sleep):
        self.provider, self.model, self.s, self.cache, self.sleep = provider, model, settings, cache, sleep
        self.model_key = model  # what the cache key calls the model
        if PROVIDERS[provider].local:  # a local folder: its contents are the model's identity
            from pathlib import Path

            from ..diffusion import folder_digest

            if not Path(model).is_dir():
                raise ValueError(f"model={provider}:{model}: no such folder")
            self.model_key = f"{model}@sha256={folder_digest(Path(model))[:16]}"
        self.requests = 0  # HTTP attempts this invocation
        self.retries = 0
        self.input_tokens = self.output_tokens = 0
        self._lock = threading.Lock()
        self._client = None
        api_key(provider, settings.api_key_env, settings.base_url)  # a missing key fails before any work

    def client(self):
        with self._lock:
            if self._client is None:
                key = api_key(self.provider, self.s.api_key_env, self.s.base_url)
                self._client = PROVIDERS[self.provider].make_client(key, self.s.base_url, self.s.timeout_s,
                                                                    self.model)
            return self._client

    def _take_budget(self) -> bool:
        with self._lock:
            if self.s.max_requests is not None and self.requests >= self.s.max_requests:
                return False
            self.requests += 1
            return True

    def _send(self, key: str, fields: dict, req: Request) -> Outcome:
        send = PROVIDERS[self.provider].send
        last = ""
        for attempt in range(self.s.max_retries + 1):
            if not self._take_budget():
                return Outcome(None, False, f"request budget ({self.s.max_requests}) spent" + (f"; last: {last}" if last else ""))
            try:
                reply = send(self.client(), self.model, req)
            except ProviderError as e:
                last = f"{e.status}: {e}"
                if not e.retryable or attempt == self.s.max_retries:
                    return Outcome(None, False, last)
                wait = e.retry_after if e.retry_after is not None else \
                    min(self.s.backoff_max_s, self.s.backoff_s * 2 ** attempt)
                with self._lock:
                    self.retries += 1
                log.info("%s %s: %s; retry %d in %.2f s", self.provider, self.model, last, attempt + 1, wait)
                self.sleep(wait)
                continue
            with self._lock:
                self.input_tokens += reply.input_tokens
                self.output_tokens += reply.output_tokens
            self.cache.put(key, fields, reply)  # only successes are cached
            return Outcome(reply, False)
        return Outcome(None, False, last)

    def run(self, requests: dict[str, tuple[dict, Request]]) -> dict[str, Outcome]:
        """Replies for ``{key: (key fields, request)}``: cached ones first, the rest through the pool."""
        out, todo = {}, []
        for key, (fields, req) in requests.items():
            hit = self.cache.get(key)
            if hit is not None:
                out[key] = Outcome(hit, True)
            else:
                todo.append((key, fields, req))
        if todo:
            log.info("%s %s: %d cached, %d to send (concurrency %d)", self.provider, self.model, len(out), len(todo),
                     self.s.concurrency)
            workers = 1 if PROVIDERS[self.provider].local else self.s.concurrency
            pool = ThreadPoolExecutor(max_workers=workers)
            try:
                futs = {key: pool.submit(self._send, key, fields, req) for key, fields, req in todo}
                for key, f in futs.items():
                    out[key] = f.result()
            except BaseException:  # Ctrl-C or an error: queued requests are not sent (finished ones are cached)
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            pool.shutdown()
        return out

    def cost(self) -> float:
        if self.s.price_in_per_mtok is None or self.s.price_out_per_mtok is None:
            return float("nan")
        return (self.input_tokens * self.s.price_in_per_mtok + self.output_tokens * self.s.price_out_per_mtok) / 1e6


def choose_examples(train: pd.DataFrame, classes: list[str], shots: int, seed: int) -> pd.DataFrame:
    """``shots`` training items balanced over classes (the remainder to the first classes), in a seeded
    random order; an error names the split and counts when a class has too few."""
    if shots == 0:
        return train.iloc[:0]
    rng = random.Random(seed)
    per = [shots // len(classes) + (1 if i < shots % len(classes) else 0) for i in range(len(classes))]
    picked = []
    for cls, n in zip(classes, per):
        pool = train[train["label_name"] == cls].sort_values("item_id")
        if len(pool) < n:
            raise ValueError(f"vlm.shots={shots}: needs {n} training images of class {cls!r}, the train split has "
                             f"{len(pool)}; lower vlm.shots")
        picked += [pool.iloc[i] for i in sorted(rng.sample(range(len(pool)), n))]
    rng.shuffle(picked)
    return pd.DataFrame(picked).reset_index(drop=True)


@register_method("vlm")
class VLMMethod(Method):
    """A VLM answering each evaluation image after the in-context examples (module docstring)."""

    Config = VLMConfig
    trains = False
    feature = "zero-shot"

    def __init__(self, task, cfg: VLMConfig, model_id: str, settings: RequestSettings | None = None,
                 sleep=time.sleep):
        super().__init__(task, cfg)
        self.provider, self.model_name = parse_vlm_model(model_id)
        self.settings = settings or RequestSettings()
        self.prompts: PromptSet = prompt_set_for(task, cfg.prompt_set, cfg.question, cfg.answers, cfg.aliases)
        from .cache import default_cache_dir

        self.cache = ResponseCache(self.settings.cache_dir or default_cache_dir())
        self.dispatcher = Dispatcher(self.provider, self.model_name, self.settings, self.cache, sleep)
        self.last_errors: list[str] = []

    def digest_fields(self) -> dict:
        return {"vlm_prompt": {"name": self.prompts.name, "question": self.prompts.question,
                               "answers": self.prompts.answers, "aliases": self.prompts.aliases}}

    def identity(self) -> dict:
        return {"weights": f"api:{self.provider}:{self.dispatcher.model_key}",
                "preprocess": f"vlm:file-bytes:shots={self.cfg.shots}:{self.cfg.reasoning}:t={self.cfg.temperature}"}

    def requests_for(self, seed: int) -> tuple[list[str], dict]:
        """Per evaluation item its cache key, and the unique requests ``{key: (fields, Request)}``."""
        ex = choose_examples(self.task.split("train"), list(self.task.classes), self.cfg.shots, seed)
        examples = [(Image.from_file(p), c) for p, c in zip(ex["path"], ex["label_name"])]
        keys, reqs = [], {}
        for path in self.items["path"]:
            conv = in_context_conversation(self.prompts, examples, Image.from_file(path), self.cfg.reasoning == "cot",
                                           self.cfg.system)
            req = Request(conv, self.cfg.temperature, self.cfg.tokens, seed)
            fields = request_key_fields(self.provider, self.dispatcher.model_key, req, self.cfg.repeat)
            key = request_key(fields)
            keys.append(key)
            reqs.setdefault(key, (fields, req))
        return keys, reqs

    def run_seed(self, seed: int, rid: str) -> SeedResult | None:
        keys, reqs = self.requests_for(seed)
        before = (self.dispatcher.requests, self.dispatcher.input_tokens, self.dispatcher.output_tokens)
        outcomes = self.dispatcher.run(reqs)
        missing = {k: o.error for k, o in outcomes.items() if o.reply is None}
        if missing:
            self.last_errors = sorted(set(missing.values()))
            log.warning("%d of %d replies missing (%s); run paused, re-run to resume", len(missing), len(outcomes),
                        "; ".join(self.last_errors[:3]))
            return None
        parsed, rows = [], []
        for key, (_, it) in zip(keys, self.items.iterrows()):
            o = outcomes[key]
            p = parse_answer(o.reply.text, self.prompts.answers, self.prompts.aliases, o.reply.refused)
            parsed.append(p)
            rows.append({"item_id": it["item_id"], "split": it["split"], "cache_key": key, "text": o.reply.text,
                         "refused": o.reply.refused, "parse": p.kind, "answer_class": p.answer_class,
                         "cached": o.cached, "input_tokens": o.reply.input_tokens,
                         "output_tokens": o.reply.output_tokens, "finish": o.reply.finish, "seed": seed,
                         "temperature": self.cfg.temperature})
        items = self.items
        resp = np.array([p.answer_class for p in parsed], dtype=object)
        trials = pd.DataFrame({"split": items["split"].to_numpy(), "item_id": items["item_id"].to_numpy(),
                               "label": items["label_name"].to_numpy(), "response": resp,
                               "score": [1.0 if p.answer_class is not None else float("nan") for p in parsed],
                               "correct": [p.answer_class is not None and p.answer_class == lab
                                           for p, lab in zip(parsed, items["label_name"])]})
        path = Path(self.run.results_dir) / "vlm" / f"{rid}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        from infra.files import temp_name

        tmp = temp_name(path)
        pd.DataFrame(rows).to_parquet(tmp, index=False)
        tmp.replace(path)
        counts = {f"n_{k}": sum(p.kind == k for p in parsed) for k in KINDS}
        d = self.dispatcher
        return SeedResult(trials=trials, facts={
            **counts, "temperature": self.cfg.temperature, "shots": self.cfg.shots, "reasoning": self.cfg.reasoning,
            "requests": d.requests - before[0], "cache_hits": sum(o.cached for o in outcomes.values()),
            "input_tokens": d.input_tokens - before[1], "output_tokens": d.output_tokens - before[2],
            "cost_usd": d.cost()})


def run_vlm(task, model_id: str, cfg: VLMConfig, results_dir, settings: RequestSettings | None = None, *,
            temperatures=None, progress: bool = True, sleep=time.sleep) -> tuple[pd.DataFrame | None, list[VLMMethod]]:
    """One run per temperature (``temperatures`` default: ``cfg.temperature`` only) and seed, through
    :func:`eval.runner.run_method`; returns (the summary rows, or None if any run paused; the methods, whose
    dispatchers hold request counts, tokens and errors)."""
    from ..runner import run_method

    temps = [cfg.temperature] if temperatures is None else check_temperatures(temperatures)
    cfgs = []
    for t in temps:  # every run's settings are checked before the first run writes anything
        try:
            cfgs.append(replace(cfg, temperature=t))
        except S.ConfigError as e:
            raise S.ConfigError(f"temperatures={list(temps)}: {e}") from None
    methods = [VLMMethod(task, c, model_id, settings, sleep) for c in cfgs]
    out, paused = [], False
    for m in methods:
        s = run_method(m, model_id, results_dir, progress=progress)
        if s is None:
            paused = True
            continue
        out.append(s)
    return (None if paused else pd.concat(out, ignore_index=True)), methods


def check_temperatures(temperatures) -> list[float]:
    """``temperatures`` (the runs of a sweep) as floats; a ``ConfigError`` names the setting unless it is a
    non-empty list of numbers (each is then checked as ``vlm.temperature``)."""
    ok = isinstance(temperatures, (list, tuple)) and len(temperatures) > 0 and all(
        isinstance(t, (int, float)) and not isinstance(t, bool) for t in temperatures)
    if not ok:
        raise S.ConfigError(f"temperatures={temperatures!r}: must be a non-empty list of numbers, e.g. [0.0, 0.7], or "
                            "null (= vlm.temperature)")
    return [float(t) for t in temperatures]


def check_best_of(best) -> int:
    """``best_of`` (how many of the best runs the paper's figure averages): a whole number >= 1."""
    if not isinstance(best, int) or isinstance(best, bool) or best < 1:
        raise S.ConfigError(f"best_of={best!r}: must be a whole number >= 1 (the paper's figure is the mean of the "
                            "best 3 runs)")
    return best


def protocol_summary(summary: pd.DataFrame, best: int = 3) -> pd.DataFrame:
    """Per (model, task, split): the mean accuracy of the best ``best`` runs (the 3D-PC paper's figure; all
    runs when there are fewer) and the mean, min and max over all runs (temperatures x seeds), with the run
    count."""
    check_best_of(best)
    rows = []
    for (model, task, split), g in summary.groupby(["model_id", "task", "split"], sort=True):
        acc = np.sort(g["accuracy"].to_numpy(float))[::-1]
        rows.append({"model_id": model, "task": task, "split": split, "runs": len(acc),
                     f"best{best}_mean": float(acc[:best].mean()), "all_runs_mean": float(acc.mean()),
                     "all_runs_min": float(acc.min()), "all_runs_max": float(acc.max()),
                     "temperatures": ",".join(f"{t:g}" for t in sorted(set(g["temperature"].astype(float))))})
    return pd.DataFrame(rows)

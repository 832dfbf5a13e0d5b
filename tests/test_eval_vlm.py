"""VLM prompting (eval/vlm/) against a real HTTP server on 127.0.0.1 that speaks the OpenAI, Anthropic and
Gemini wire formats (eval/vlm/fake_server.py), through the official SDKs."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

# the three SDKs are found here, not imported (~4 s of imports that only the tests using them pay)
for _sdk in ("openai", "anthropic", "google.genai"):
    if importlib.util.find_spec(_sdk) is None:
        pytest.skip(f"{_sdk} is not installed", allow_module_level=True)

from eval import results as R  # noqa: E402
from eval.tasks import load_task  # noqa: E402
from eval.vlm import RequestSettings, VLMConfig, protocol_summary, run_vlm  # noqa: E402
from eval.vlm.fake_server import FakeVLMServer, image_sha256_b64  # noqa: E402
from eval.vlm.parse import parse_answer  # noqa: E402
from eval.vlm.prompts import PROMPT_SETS  # noqa: E402
from eval.vlm.run import choose_examples  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-test-DO-NOT-LEAK-7f3a9c"
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}
N_TRAIN, N_TEST = 24, 16


def _build(root: Path) -> Path:
    """A minimal 3D-PC build: random 8x8 PNGs, labels alternating, human subset = every third test image."""
    from infra.images import save_png

    rng = np.random.default_rng(0)
    (root / "img").mkdir(parents=True)
    rows = []
    for i in range(N_TRAIN + N_TEST):
        split = "train" if i < N_TRAIN else "test"
        f = f"img/{i:03d}.png"
        save_png(root / f, rng.integers(0, 255, (8, 8, 3), dtype=np.uint8))
        rows.append(dict(file_name=f, split=split, vpt_label=i % 2, depth_label=(i // 2) % 2, in_vpt=True,
                         in_depth=True, in_human=split == "test" and i % 3 == 0, in_strategy=False,
                         scene=f"s{i // 4}", setting=i % 4))
    pd.DataFrame(rows).to_parquet(root / "metadata.parquet")
    (root / "manifest.json").write_text("{}")
    return root


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("vlm") / "build")


@pytest.fixture
def task(build):
    return load_task(build, "vpt")


@pytest.fixture
def keys(monkeypatch):
    for v in KEY_ENV.values():
        monkeypatch.setenv(v, SECRET)


def _sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _truth(task) -> dict:
    """Correct answer token per image hash (evaluation items)."""
    ans = PROMPT_SETS["3dpc_camera"]["vpt"].answers
    return {_sha(p): ans[lab] for p, lab in zip(task.items["path"], task.items["label_name"])}


def _settings(srv, provider, tmp_path, **kw) -> RequestSettings:
    base = srv.openai_base if provider == "openai" else srv.url
    return RequestSettings(**{"base_url": base, "cache_dir": str(tmp_path / "cache"), "backoff_s": 0.01,
                              "timeout_s": 5.0, **kw})


def _no_sleep(waits):
    return lambda s: waits.append(s)


def _images_of_turn(provider: str, turn: dict) -> list[str]:
    if provider == "openai":
        return [image_sha256_b64(p["image_url"]["url"].split(",", 1)[1]) for p in turn["content"]
                if p["type"] == "image_url"]
    if provider == "anthropic":
        return [image_sha256_b64(p["source"]["data"]) for p in turn["content"] if p["type"] == "image"]
    return [image_sha256_b64(p["inlineData"]["data"]) for p in turn["parts"] if "inlineData" in p]


def _text_of_turn(provider: str, turn: dict) -> str:
    if provider == "gemini":
        return "".join(p.get("text", "") for p in turn["parts"])
    c = turn["content"]
    return c if isinstance(c, str) else "".join(p.get("text", "") for p in c if p.get("type") == "text")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_in_context_layout_20_examples_then_test_image(provider, task, keys, tmp_path):
    truth = _truth(task)
    with FakeVLMServer(answer=lambda sha, p: truth.get(sha, "??")) as srv:
        summ, _ = run_vlm(task, f"{provider}:m", VLMConfig(n_boot=200), tmp_path / "res",
                          _settings(srv, provider, tmp_path), progress=False)
        reqs = list(srv.requests)
    assert float(summ["accuracy"].min()) == 1.0  # the server answered every item correctly, in every split
    unique_eval = task.items[task.items["split"].isin(task.eval_splits)]["path"].nunique()
    assert len(reqs) == unique_eval  # an image in two evaluation splits is asked once
    ex = choose_examples(task.split("train"), task.classes, 20, seed=0)
    assert len(ex) == 20 and (ex["label_name"] == "1").sum() == 10
    ps = PROMPT_SETS["3dpc_camera"]["vpt"]
    for r in reqs:
        turns = r["body"]["messages"] if provider != "gemini" else r["body"]["contents"]
        assert len(turns) == 41
        roles = [t["role"] for t in turns]
        assert roles == (["user", "assistant" if provider != "gemini" else "model"] * 20 + ["user"])
        shown = [_images_of_turn(provider, t) for t in turns[0::2]]
        assert all(len(s) == 1 for s in shown)
        assert [s[0] for s in shown[:20]] == [_sha(p) for p in ex["path"]]  # the examples, in order
        assert [_text_of_turn(provider, t) for t in turns[1::2]] == [ps.answers[c] for c in ex["label_name"]]
        assert all(_text_of_turn(provider, t) == ps.question for t in turns[0::2])
        assert shown[20][0] in truth  # the test image last
        assert "green 3D camera" in ps.question and "Answer only YES or NO" in ps.question
        auth = " ".join(str(v) for k, v in r["headers"].items() if k.lower() in ("authorization", "x-api-key",
                                                                               "x-goog-api-key"))
        assert SECRET in auth  # the key from the environment reached the server...
    # ...and no output file contains it
    for f in list((tmp_path / "res").rglob("*")) + list((tmp_path / "cache").rglob("*")):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_parsing_counts_and_unparseable_trials_are_kept(task, keys, tmp_path):
    test_paths = task.split("test")["path"].tolist()
    scripted = {_sha(test_paths[4]): "Yes, the camera can see it.", _sha(test_paths[1]): "Maybe.",
                _sha(test_paths[2]): "I'm sorry, but I cannot determine that from the image.",
                _sha(test_paths[3]): "**NO**"}
    with FakeVLMServer(answer=lambda sha, p: scripted.get(sha, "YES")) as srv:
        srv.script.append({"refuse": True})  # the provider's own refusal form on the first request (ids[0])
        summ, ms = run_vlm(task, "openai:m", VLMConfig(shots=4, n_boot=200), tmp_path / "res",
                           _settings(srv, "openai", tmp_path, concurrency=1), progress=False)
    test = summ[summ["split"] == "test"].iloc[0]
    n_eval = int(task.items["split"].isin(task.eval_splits).sum())  # the counts cover every evaluation row
    assert (test.n_exact + test.n_alias + test.n_refusal + test.n_unparseable) == n_eval
    trials = R.read_results(tmp_path / "res")
    t = trials[trials["split"] == "test"].set_index("item_id")
    assert len(t) == N_TEST  # nothing dropped
    ids = task.split("test")["item_id"].tolist()
    assert pd.isna(t.loc[ids[0], "response"])  # the provider's refusal
    assert t.loc[ids[4], "response"] == "1"  # alias
    assert pd.isna(t.loc[ids[1], "response"]) and not t.loc[ids[1], "correct"]  # unparseable -> None, an error
    assert pd.isna(t.loc[ids[2], "response"])  # textual refusal
    assert t.loc[ids[3], "response"] == "0"  # exact, markdown stripped
    raw = pd.read_parquet(next((tmp_path / "res" / "vlm").glob("*.parquet")))
    kinds = raw.drop_duplicates("cache_key").set_index("item_id")["parse"]
    assert kinds[ids[0]] == "refusal" and kinds[ids[4]] == "alias" and kinds[ids[1]] == "unparseable" and kinds[ids[2]] == "refusal"
    assert (raw["refused"]).sum() >= 1 and (raw.loc[raw["refused"], "parse"] == "refusal").all()
    assert int(summ["n_refusal"].iloc[0]) >= 2 and int(summ["n_unparseable"].iloc[0]) >= 1


def test_zero_shot_and_chain_of_thought_variants(task, keys, tmp_path):
    truth = _truth(task)
    with FakeVLMServer(answer=lambda sha, p: f"The ball is behind the couch.\nAnswer: {truth[sha]}") as srv:
        summ, _ = run_vlm(task, "anthropic:m", VLMConfig(shots=0, reasoning="cot", n_boot=200), tmp_path / "res",
                          _settings(srv, "anthropic", tmp_path), progress=False)
        body = srv.requests[0]["body"]
    assert len(body["messages"]) == 1 and body["max_tokens"] == 1024  # zero-shot: the test image alone
    q = _text_of_turn("anthropic", body["messages"][0])
    assert q.startswith(PROMPT_SETS["3dpc_camera"]["vpt"].question) and "Answer: YES or NO" in q
    assert float(summ["accuracy"].min()) == 1.0 and int(summ["n_exact"].iloc[0]) == len(R.read_results(tmp_path / "res"))


def test_parse_rules():
    ans, al = PROMPT_SETS["3dpc_camera"]["vpt"].answers, PROMPT_SETS["3dpc_camera"]["vpt"].aliases
    cases = {"YES": ("1", "exact"), " no. ": ("0", "exact"), "'Yes'": ("1", "exact"),
             "Let me think.\nThe ball is behind the couch.\nAnswer: NO": ("0", "exact"),
             "The ball is not visible from there.": ("0", "alias"), "It is visible.": ("1", "alias"),
             "yes or no? I can't tell.": (None, "refusal"), "I cannot help with that": (None, "refusal"),
             "Perhaps": (None, "unparseable"), "": (None, "refusal"), "yesterday": (None, "unparseable")}
    for text, (cls, kind) in cases.items():
        p = parse_answer(text, ans, al)
        assert (p.answer_class, p.kind) == (cls, kind), text
    d = PROMPT_SETS["3dpc_camera"]["depth"]
    assert parse_answer("CAMERA", d.answers, d.aliases).answer_class == "1"  # 1 = ball further = camera closer
    assert parse_answer("BALL", d.answers, d.aliases).answer_class == "0"
    assert PROMPT_SETS["3dpc_paper"]["depth"].answers == {"0": "BALL", "1": "ARROW"}
    assert parse_answer("YES", ans, al, refused=True).kind == "refusal"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_retries_429_retry_after_500_timeout_malformed_and_errors_never_cached(provider, task, keys, tmp_path):
    waits = []
    with FakeVLMServer() as srv:
        srv.script.extend([{"status": 429, "retry_after": 7}, {"status": 500}, {"sleep": 1.5}, {"malformed": True},
                           {"status": 503}])
        summ, ms = run_vlm(task, f"{provider}:m", VLMConfig(shots=2, n_boot=200), tmp_path / "res",
                           _settings(srv, provider, tmp_path, concurrency=1, timeout_s=0.5, backoff_s=0.25),
                           progress=False, sleep=_no_sleep(waits))
        n = srv.count()
    unique = task.items[task.items["split"].isin(task.eval_splits)]["path"].nunique()
    assert summ is not None and n == unique + 5 and ms[0].dispatcher.retries == 5
    # Retry-After (7 s) honoured; otherwise backoff 0.25 * 2**attempt per consecutive failure of one request
    assert waits == [7.0, 0.25 * 2, 0.25 * 4, 0.25 * 8, 0.25 * 16], waits
    cached = list((tmp_path / "cache").rglob("*.json"))
    assert len(cached) == unique and all(json.loads(f.read_text())["text"] == "YES" for f in cached)


class _FakeGemini:
    """A google-genai client stand-in: ``models.generate_content`` returns the queued responses in turn."""

    def __init__(self, responses):
        self.responses, self.calls = list(responses), 0
        self.models = self

    def generate_content(self, model, contents, config):
        self.calls += 1
        return self.responses.pop(0)


def _gemini_response(text=None, block=None):
    from types import SimpleNamespace as NS

    usage = NS(prompt_token_count=100, candidates_token_count=2)
    feedback = NS(block_reason=block) if block else None
    cands = [] if text is None else [NS(finish_reason="STOP", content=NS(parts=[NS(text=text)]))]
    return NS(candidates=cands, prompt_feedback=feedback, usage_metadata=usage)


def test_gemini_reply_without_candidates_is_retried_never_cached_as_a_refusal(task, keys, tmp_path):
    """Issue 34.9: a 200 reply with no candidates and no block reason was cached as a refusal (and never asked
    again); it is a transient error now: retried, and only the real answer is cached. A blocked prompt
    (promptFeedback.blockReason) stays a refusal. Fake client first, then the real SDK against the fake server."""
    from eval.vlm.cache import ResponseCache, request_key, request_key_fields
    from eval.vlm.prompts import Conversation, Turn
    from eval.vlm.providers import Request
    from eval.vlm.run import Dispatcher

    req = Request(Conversation((Turn("user", ("Is the ball visible?",)),)), 0.0, 16, 0)
    fields = request_key_fields("gemini", "m", req)
    key = request_key(fields)
    cache = ResponseCache(tmp_path / "c1")
    waits = []
    d = Dispatcher("gemini", "m", RequestSettings(cache_dir=str(tmp_path / "c1"), backoff_s=0.5), cache,
                   sleep=_no_sleep(waits))
    d._client = _FakeGemini([_gemini_response(), _gemini_response("YES")])
    out = d.run({key: (fields, req)})[key]
    assert d._client.calls == 2 and d.retries == 1 and waits == [0.5]
    assert out.reply.text == "YES" and not out.reply.refused and cache.get(key).text == "YES"
    cache2 = ResponseCache(tmp_path / "c2")
    d = Dispatcher("gemini", "m", RequestSettings(cache_dir=str(tmp_path / "c2"), max_retries=0), cache2)
    d._client = _FakeGemini([_gemini_response()])
    out = d.run({key: (fields, req)})[key]
    assert out.reply is None and "no candidates" in out.error and cache2.get(key) is None  # not cached
    d._client = _FakeGemini([_gemini_response(block="SAFETY")])
    out = d.run({key: (fields, req)})[key]
    assert out.reply.refused and out.reply.finish == "blocked" and cache2.get(key).refused
    with FakeVLMServer() as srv:
        srv.script.extend([{"empty": True}, {"blocked": True}])
        summ, ms = run_vlm(task, "gemini:m", VLMConfig(shots=2, n_boot=200), tmp_path / "res",
                           _settings(srv, "gemini", tmp_path, concurrency=1), progress=False, sleep=_no_sleep([]))
        n = srv.count()
    unique = task.items[task.items["split"].isin(task.eval_splits)]["path"].nunique()
    assert summ is not None and n == unique + 1 and ms[0].dispatcher.retries == 1
    det = pd.read_parquet(next((tmp_path / "res" / "vlm").glob("*.parquet")))
    refused = det[det["refused"]]  # the blocked prompt only (its image may be in two evaluation splits)
    assert refused["cache_key"].nunique() == 1 and (refused["finish"] == "blocked").all()
    assert int(summ["n_refusal"].iloc[0]) == len(refused)


def test_every_temperature_and_best_of_checked_before_the_first_run(task, keys, tmp_path):
    """Issue 34.12: temperatures=[0.0, 9.0] ran (and wrote) the t=0 run before rejecting 9.0; best_of=0 was
    accepted. Both are errors now before any request or file."""
    from infra.schema import ConfigError

    with FakeVLMServer() as srv:
        for temps in ([0.0, 9.0], [], "0.3"):
            with pytest.raises(ConfigError) as e:
                run_vlm(task, "openai:m", VLMConfig(shots=2, n_boot=200), tmp_path / "res",
                        _settings(srv, "openai", tmp_path), temperatures=temps, progress=False)
            assert srv.count() == 0 and not (tmp_path / "res").exists(), f"{temps}: a run was made first"
            assert str(e.value).startswith(f"temperatures={temps!r}"[:14]), e.value
    with pytest.raises(ConfigError, match="best_of=0: must be a whole number >= 1"):
        protocol_summary(pd.DataFrame({"model_id": ["m"], "task": ["t"], "split": ["test"], "accuracy": [0.5],
                                       "temperature": [0.0]}), best=0)


def test_failed_requests_pause_the_run_and_are_retried_next_time(task, keys, tmp_path):
    with FakeVLMServer() as srv:
        srv.script.extend([{"status": 400}])  # not retryable: fails at once, not cached
        s1, ms = run_vlm(task, "openai:m", VLMConfig(shots=2, n_boot=200), tmp_path / "res",
                         _settings(srv, "openai", tmp_path, concurrency=1), progress=False)
        assert s1 is None and any("400" in e for e in ms[0].last_errors)
        assert not list((tmp_path / "res").rglob("trials/*.parquet"))  # nothing written for a paused run
        first = srv.count()
        s2, _ = run_vlm(task, "openai:m", VLMConfig(shots=2, n_boot=200), tmp_path / "res",
                        _settings(srv, "openai", tmp_path), progress=False)
        assert s2 is not None and srv.count() - first == 1  # only the failed request is sent again


def test_cache_second_run_makes_zero_requests_and_budget_pauses(task, keys, tmp_path):
    cfg = VLMConfig(shots=2, n_boot=200)
    unique = task.items[task.items["split"].isin(task.eval_splits)]["path"].nunique()
    with FakeVLMServer() as srv:
        s, ms = run_vlm(task, "openai:m", cfg, tmp_path / "res1", _settings(srv, "openai", tmp_path, max_requests=5),
                        progress=False)
        assert s is None and srv.count() == 5 and any("budget" in e for e in ms[0].last_errors)
        s, ms = run_vlm(task, "openai:m", cfg, tmp_path / "res1", _settings(srv, "openai", tmp_path), progress=False)
        assert s is not None and srv.count() == unique  # resumed: only the 11 missing ones were sent
        assert int(s["cache_hits"].iloc[0]) == 5 and int(s["requests"].iloc[0]) == unique - 5
        before = srv.count()
        s, _ = run_vlm(task, "openai:m", cfg, tmp_path / "res2", _settings(srv, "openai", tmp_path), progress=False)
        assert srv.count() == before and int(s["requests"].iloc[0]) == 0  # a fully cached run: zero requests
        # another temperature, seed or model is another cache entry
        run_vlm(task, "openai:m", VLMConfig(shots=2, n_boot=200, temperature=0.3), tmp_path / "res2",
                _settings(srv, "openai", tmp_path), progress=False)
        assert srv.count() == before + unique


def test_an_error_cancels_the_queued_requests(task, tmp_path):
    """A programming error (not a provider failure) is raised, not retried, and the requests still queued in
    the pool are not sent (an interrupt takes the same path)."""
    from eval.vlm.providers import PROVIDERS, register_provider

    calls = []

    def send(client, model, req):
        calls.append(1)
        time.sleep(0.05)
        raise RuntimeError("boom")

    register_provider("test_raise", lambda *a: None, needs_key=False)(send)
    try:
        with pytest.raises(RuntimeError, match="boom"):
            run_vlm(task, "test_raise:m", VLMConfig(shots=2, n_boot=200), tmp_path / "res",
                    RequestSettings(cache_dir=str(tmp_path / "c"), concurrency=2), progress=False)
        time.sleep(0.5)
        assert 1 <= len(calls) <= 4 < task.split("test")["path"].nunique()
    finally:
        PROVIDERS.unregister("test_raise")


def test_protocol_summary_best_3_and_all_runs():
    rows = [{"model_id": "m", "task": "t", "split": "test", "accuracy": a, "temperature": i / 10}
            for i, a in enumerate([0.5, 0.6, 0.55, 0.7, 0.4, 0.52, 0.65, 0.45])]
    p = protocol_summary(pd.DataFrame(rows)).iloc[0]
    assert p["best3_mean"] == pytest.approx((0.7 + 0.65 + 0.6) / 3)
    assert p["all_runs_mean"] == pytest.approx(np.mean([0.5, 0.6, 0.55, 0.7, 0.4, 0.52, 0.65, 0.45]))
    assert p["runs"] == 8 and p["temperatures"].startswith("0,0.1")


def _cli(args, env_extra=None, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    return subprocess.Popen([sys.executable, "-m", "eval", "vlm", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_cli_resume_after_kill_and_no_key_in_any_output(build, tmp_path):
    task = load_task(build, "vpt")
    unique = task.items[task.items["split"].isin(task.eval_splits)]["path"].nunique()
    cache = tmp_path / "cache"
    args = ["model=openai:m", f"task={build}", f"out={tmp_path / 'res'}", "vlm.shots=2", "vlm.n_boot=200",
            "temperatures=[0.0]", f"requests.cache_dir={cache}", "requests.concurrency=1", "progress=false"]
    with FakeVLMServer(delay=0.15) as srv:
        args.append(f"requests.base_url={srv.openai_base}")
        p = _cli(args, {"OPENAI_API_KEY": SECRET})
        deadline = time.time() + 120
        while len(list(cache.rglob("*.json"))) < 4 and time.time() < deadline and p.poll() is None:
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.communicate()
        done = len(list(cache.rglob("*.json")))
        assert 4 <= done < unique
        sent_before = srv.count()
        p = _cli(args, {"OPENAI_API_KEY": SECRET})
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        assert srv.count() - sent_before == unique - done  # only the missing replies were requested
        assert "best 3 of 1 runs" in out and "all runs" in out
        assert SECRET not in out + err
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_cli_bad_input_is_one_error_line(build, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base = [f"task={build}", f"out={tmp_path / 'res'}", f"requests.cache_dir={tmp_path / 'c'}", "temperatures=[0.0]"]
    with pytest.raises(ValueError, match="vlm.reasoning"):
        VLMConfig(reasoning="loud")
    for args, needle in ([["model=nope:m"] + base, "provider"], [["model=openai:m"] + base, "OPENAI_API_KEY"]):
        p = _cli(args, {"OPENAI_API_KEY": ""})
        out, err = p.communicate(timeout=120)
        assert p.returncode == 2 and err.startswith("error:") and needle in err and "Traceback" not in err, err


def _tiny_llava(folder: Path) -> Path:
    """A random tiny LLaVA (CLIP vision tower + Llama) with a character-level tokenizer and a chat template,
    built from configs in code and saved like any local transformers model."""
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor, PreTrainedTokenizerFast)

    words = ["<pad>", "<s>", "</s>", "<unk>", "<image>"] + [chr(c) for c in range(32, 127)] + ["\n"]
    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                  unk_token="<unk>", extra_special_tokens={"image_token": "<image>"})
    template = ("{% for m in messages %}{{ m['role'] }}: {% for c in m['content'] %}{% if c['type'] == 'image' %}"
                "<image>{% else %}{{ c['text'] }}{% endif %}{% endfor %}\n{% endfor %}"
                "{% if add_generation_prompt %}assistant: {% endif %}")
    proc = LlavaProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 16},
                                                             crop_size={"height": 16, "width": 16}),
                          tokenizer=tok, chat_template=template, patch_size=8, vision_feature_select_strategy="full",
                          num_additional_image_tokens=1)
    torch.manual_seed(0)
    cfg = LlavaConfig(vision_config=CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                     num_attention_heads=2, image_size=16, patch_size=8),
                      text_config=LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32,
                                              num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                              max_position_embeddings=8192),
                      image_token_index=4, vision_feature_select_strategy="full", vision_feature_layer=-1)
    LlavaForConditionalGeneration(cfg).eval().save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


@pytest.mark.slow  # ~60 s on a loaded 2-core machine (transformers import, model build, 66 generations)
def test_local_transformers_vlm_same_prompts_parsing_and_cache(task, tmp_path):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny ops: a second thread only waits for its partner on a busy machine
    try:
        _local_vlm_checks(task, tmp_path)
    finally:
        torch.set_num_threads(before)


def _local_vlm_checks(task, tmp_path):
    folder = _tiny_llava(tmp_path / "llava")
    cfg = VLMConfig(shots=2, n_boot=200, temperature=0.7, max_tokens=4)
    st = RequestSettings(cache_dir=str(tmp_path / "cache"))
    s1, ms = run_vlm(task, f"hf:{folder}", cfg, tmp_path / "res1", st, progress=False)
    n_eval = int(task.items["split"].isin(task.eval_splits).sum())
    row = s1.iloc[0]
    assert row.n_exact + row.n_alias + row.n_refusal + row.n_unparseable == n_eval  # random text: counted, kept
    assert len(R.read_results(tmp_path / "res1")) == n_eval
    unique = task.items[task.items["split"].isin(task.eval_splits)]["path"].nunique()
    assert ms[0].dispatcher.requests == unique
    raw = pd.read_parquet(next((tmp_path / "res1" / "vlm").glob("*.parquet")))
    assert raw["input_tokens"].min() > 100  # the chat template carried 2 examples + the test question
    # the same seed reproduces sampled replies; a cached re-run generates nothing
    s2, ms2 = run_vlm(task, f"hf:{folder}", cfg, tmp_path / "res2", RequestSettings(cache_dir=str(tmp_path / "c2")),
                      progress=False)
    raw2 = pd.read_parquet(next((tmp_path / "res2" / "vlm").glob("*.parquet")))
    assert raw["text"].tolist() == raw2["text"].tolist()
    s3, ms3 = run_vlm(task, f"hf:{folder}", cfg, tmp_path / "res3", st, progress=False)
    assert ms3[0].dispatcher.requests == 0
    assert R.read_results(tmp_path / "res1")["weights"].iloc[0].startswith(f"api:hf:{folder}@sha256=")

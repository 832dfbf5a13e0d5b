"""The diffusion zero-shot classifier (eval/diffusion.py) on a tiny Stable-Diffusion-shaped model that the
tests build and train themselves (eval/diffusion_tiny.py): no downloads."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
if importlib.util.find_spec("diffusers") is None:  # found, not imported: diffusers costs ~5 s of imports per
    pytest.skip("diffusers is not installed", allow_module_level=True)  # test process, paid by the tests that use it

from eval import results as R  # noqa: E402
from eval.diffusion import (THREEDPC_PROMPTS, DiffusionConfig, DiffusionError, DiffusionModel,  # noqa: E402
                            class_prompts, classify_images, classify_latent, load_diffusion, make_noise,
                            run_diffusion, scheduler_timesteps, stage_indices, timestep_lattice)
from eval.diffusion_tiny import TOY_PROMPTS, build_tiny, write_toy_dataset  # noqa: E402
from eval.tasks import load_task  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
N_HELD_OUT = 32


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One intra-op thread: the tiny model's ops are small, and on a shared 2-core machine a second thread
    mostly waits for its descheduled partner (measured several times slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_trained(tmp_path_factory):
    """A tiny model trained for 200 CPU steps on red discs vs blue squares (built once per session)."""
    folder = tmp_path_factory.mktemp("tiny_sd") / "model"
    torch.manual_seed(0)
    facts = build_tiny(folder, steps=200, seed=0)
    return folder, facts


@pytest.fixture(scope="session")
def toy_task(tmp_path_factory):
    root = write_toy_dataset(tmp_path_factory.mktemp("toy") / "data", N_HELD_OUT, seed=12345)  # held-out draw
    return load_task(root)


def _cfg(**kw):
    return DiffusionConfig(**{"prompts": TOY_PROMPTS, "keep": (1,), "samples": (16,), "n_boot": 200, **kw})


def test_trained_tiny_model_classifies_held_out_images_far_above_chance(tiny_trained, toy_task, tmp_path):
    folder, facts = tiny_trained
    model = load_diffusion(str(folder))
    summ = run_diffusion(toy_task, model, "diffusion:tiny", _cfg(), tmp_path / "res", progress=False)
    acc = float(summ["accuracy"].iloc[0])
    # 32 balanced held-out images: P(acc >= 0.8 | chance) < 1e-3
    assert acc >= 0.8, (acc, facts)
    trials = R.read_results(tmp_path / "res")
    assert len(trials) == N_HELD_OUT and set(trials["response"]) <= set(toy_task.classes)
    assert (trials["method"] == "diffusion").all() and (trials["feature"] == "zero-shot").all()
    assert trials["weights"].str.startswith("file:sha256=").all()
    s = R.read_results(tmp_path / "res", "summary")
    assert s["weighting"].iloc[0] == "uniform" and s["schedule"].iloc[0] == "keep=1;samples=16"
    assert s["unet_evals_per_image"].iloc[0] == 32  # 2 classes x 16 samples
    detail = pd.read_parquet(next((tmp_path / "res" / "diffusion").glob("*.parquet")))
    assert set(detail["n_samples"]) == {16} and len(detail) == 2 * N_HELD_OUT
    # a second run of the same config is skipped (resumable), a different seed is a new run
    run_diffusion(toy_task, model, "diffusion:tiny", _cfg(), tmp_path / "res", progress=False)
    assert len(list((tmp_path / "res" / "trials").glob("*.parquet"))) == 1


def test_random_weights_are_at_chance(toy_task, tmp_path):
    folder = tmp_path / "random"
    build_tiny(folder, steps=0, seed=3)
    model = load_diffusion(str(folder))
    # the fail-fast reading of T from the scheduler config alone agrees with the loaded model's noise schedule
    assert scheduler_timesteps(str(folder)) == model.num_train_timesteps == 1000
    res = classify_images(model, toy_task.items["path"].tolist(), list(TOY_PROMPTS.values()), _cfg(), seed=0)
    acc = np.mean([r.choice for r in res] == toy_task.items["label"].to_numpy())
    assert 0.25 <= acc <= 0.75, acc  # binomial(32, 0.5): 99.5% of draws fall in [0.28, 0.72]


def test_same_seed_same_noise_same_predictions(tiny_trained, toy_task):
    model = load_diffusion(str(tiny_trained[0]))
    paths, prompts = toy_task.items["path"].tolist()[:6], list(TOY_PROMPTS.values())
    a = classify_images(model, paths, prompts, _cfg(), seed=7)
    b = classify_images(model, paths, prompts, _cfg(), seed=7)
    c = classify_images(model, paths, prompts, _cfg(), seed=8)
    assert [r.choice for r in a] == [r.choice for r in b]
    assert np.array_equal(np.stack([r.errors for r in a]), np.stack([r.errors for r in b]))
    assert not np.array_equal(np.stack([r.errors for r in a]), np.stack([r.errors for r in c]))
    assert torch.equal(make_noise(7, 4, (4, 8, 8)), make_noise(7, 4, (4, 8, 8)))


class _RecordingUNet:
    """A stand-in denoiser: eps_hat = a per-class constant offset times x_t (so classes differ), recording
    the (class, t, noise) of every call — to check pairing and the adaptive schedule exactly."""

    def __init__(self, scale):
        self.scale, self.calls = scale, []

    def __call__(self, xt, t, encoder_hidden_states):
        cls = encoder_hidden_states[:, 0, 0].long()
        self.calls.append((cls.tolist(), t.tolist(), xt.clone()))
        out = xt * self.scale[cls].view(-1, 1, 1, 1)
        return type("O", (), {"sample": out})()


def _fake_model(k_scale):
    T = 1000
    betas = np.linspace(0.00085 ** 0.5, 0.012 ** 0.5, T) ** 2
    return DiffusionModel(_RecordingUNet(torch.tensor(k_scale, dtype=torch.float32)), None, None, None,
                          np.cumprod(1 - betas), 1.0, 16, "test")


def test_adaptive_rounds_share_samples_across_classes_and_prune():
    model = _fake_model([0.9, 0.2, 0.5, 0.0])
    emb = torch.arange(4, dtype=torch.float32).view(4, 1, 1).expand(4, 2, 3).contiguous()
    x0 = torch.randn(4, 8, 8, generator=torch.Generator().manual_seed(0))
    noise = make_noise(0, 16, (4, 8, 8))
    cfg = DiffusionConfig(keep=(2, 1), samples=(4, 16), batch_size=5)
    r = classify_latent(model, x0, emb, noise, cfg)
    # stage 1: 4 samples for all 4 classes; stage 2: 12 more for the 2 survivors
    assert list(r.n_samples) == [4 if r.left_at[c] == 0 else 16 for c in range(4)]
    assert list(np.sort(r.left_at)) == [-1, 0, 0, 1] and r.unet_evals == 4 * 4 + 2 * 12
    assert r.score == 1.0 or 0.5 < r.score < 1.0  # the winner's softmax share among the last stage's classes
    # pairing: every class sees the same x_t at a given t
    seen = {}
    for cls, ts, xt in model.unet.calls:
        for c, t, x in zip(cls, ts, xt):
            seen.setdefault(t, []).append(x)
    for t, xs in seen.items():
        assert all(torch.equal(xs[0], x) for x in xs), t
    # the chosen class has the lowest error among the last stage's classes
    survivors = np.flatnonzero(r.n_samples == 16)
    assert r.choice == survivors[np.argmin(r.errors[survivors])]
    assert stage_indices(4, 16) == [2, 6, 10, 14] and stage_indices(16, 16) == list(range(16))
    assert list(timestep_lattice(1000, 4)) == [125, 375, 625, 875]


def _li_stage_timesteps(T: int, samples: list[int]) -> list[list[int]]:
    """Li et al.'s rule as their eval_prob_adaptive.py states it, written out plainly: the lattice of M =
    max(samples) points, then per stage every (M // n)-th point from M // n // 2, the first n, minus those
    already evaluated."""
    m = max(samples)
    lattice = list(range(T // m // 2, T, T // m))[:m]
    done, out = set(), []
    for n in samples:
        cur = [t for t in lattice[len(lattice) // n // 2::len(lattice) // n][:n] if t not in done]
        done.update(cur)
        out.append(cur)
    return out


@pytest.mark.parametrize("samples", [(50, 500), (50,), (10, 20, 40), (4, 16), (3, 7, 100), (1, 1000)])
def test_stages_take_li_et_al_timesteps(samples):
    """Issue 34.8: the paper's schedule's first stage takes t = 11, 31, ..., 991 (centred, as in Li et al.'s
    code; it took 1, 21, ..., 981), and each stage of any schedule takes the timesteps their rule takes, in order."""
    ref = _li_stage_timesteps(1000, list(samples))
    if samples == (50, 500):
        assert ref[0] == list(range(11, 1000, 20)) and sorted(ref[0] + ref[1]) == list(range(1, 1000, 2))
    k = len(samples) + 1  # one class pruned per stage: the winner is evaluated in every stage
    model = _fake_model([0.1 * (c + 1) for c in range(k)])
    emb = torch.arange(k, dtype=torch.float32).view(k, 1, 1).expand(k, 2, 3).contiguous()
    x0 = torch.randn(4, 2, 2, generator=torch.Generator().manual_seed(0))
    cfg = DiffusionConfig(keep=tuple(range(k - 1, 0, -1)), samples=samples, batch_size=64)
    r = classify_latent(model, x0, emb, make_noise(0, max(samples), (4, 2, 2)), cfg)
    winner = [t for cls, ts, _ in model.unet.calls for c, t in zip(cls, ts) if c == r.choice]
    assert winner == [t for stage in ref for t in stage]
    assert r.n_samples[r.choice] == len(winner) == len(set(winner))


def test_prompts_identical_or_cut_to_the_same_tokens_are_refused_before_any_work(toy_task, tmp_path, caplog):
    """Issue 34.8: prompts longer than the text encoder's context that are cut to identical token lists (the
    tiny model's CLIP tokenizer keeps 16 tokens, one per character here) are an error naming both classes; a
    prompt that is cut but still differs is a warning; identical prompts are refused before a model loads."""
    import logging

    from eval.diffusion import check_prompt_tokens, check_schedule
    from eval.diffusion_tiny import TINY_TEXT_LEN, write_tiny_tokenizer

    tok = write_tiny_tokenizer(tmp_path / "tok")
    model = DiffusionModel(None, None, None, tok, np.linspace(0.999, 0.01, 1000), 1.0, 16, "test")
    long = {"disc": "a photo of a small red disc", "square": "a photo of a small blue square"}
    with pytest.raises(DiffusionError, match=f"'disc' and 'square' become the same tokens .* {TINY_TEXT_LEN} tokens"):
        check_prompt_tokens(model, list(long.values()), list(long))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="eval.diffusion"):
        check_prompt_tokens(model, ["a red disc ... and more", "blue"], ["disc", "square"])
    assert "class 'disc'" in caplog.text and "cut to the text encoder's 16" in caplog.text
    assert "'square'" not in caplog.text
    with pytest.raises(DiffusionError, match="'disc' and 'square' are identical"):
        class_prompts(toy_task, DiffusionConfig(prompts={"disc": "a shape", "square": "a shape"}))
    # through the method: refused before the results folder exists (and so for a schedule that cannot be run)
    for cfg, match in ((_cfg(prompts=long), "become the same tokens"), (_cfg(samples=(5000,)), "at most 1000"),
                       (_cfg(keep=(5, 1), samples=(2, 4)), "keeps 5 of the task's 2 classes")):
        with pytest.raises(DiffusionError, match=match):
            run_diffusion(toy_task, model, "diffusion:tiny", cfg, tmp_path / "res", progress=False)
        assert not (tmp_path / "res").exists()
    check_schedule(_cfg(keep=(1,), samples=(1000,)), 2, 1000)  # the limits themselves are allowed


def test_batched_evaluation_equals_one_at_a_time():
    """The batched loop (fast path) against batch_size=1 (the plain twin): identical errors and choice."""
    emb = torch.arange(3, dtype=torch.float32).view(3, 1, 1).expand(3, 2, 3).contiguous()
    x0 = torch.randn(4, 8, 8, generator=torch.Generator().manual_seed(1))
    noise = make_noise(3, 8, (4, 8, 8))
    a = classify_latent(_fake_model([0.3, 0.1, 0.6]), x0, emb, noise, DiffusionConfig(samples=(8,), batch_size=1))
    b = classify_latent(_fake_model([0.3, 0.1, 0.6]), x0, emb, noise, DiffusionConfig(samples=(8,), batch_size=24))
    assert a.choice == b.choice and np.allclose(a.errors, b.errors, rtol=1e-6, atol=0)


def test_prompts_default_to_the_papers_for_3dpc_and_are_config_elsewhere(toy_task):
    class T:
        kind, name, classes = "threedpc", "3dpc/depth", ["0", "1"]

    assert class_prompts(T, DiffusionConfig()) == [THREEDPC_PROMPTS["depth"]["0"], THREEDPC_PROMPTS["depth"]["1"]]
    assert "green arrow closer" in class_prompts(T, DiffusionConfig())[1]  # 1 = ball further = arrow closer
    with pytest.raises(DiffusionError, match="template"):
        class_prompts(toy_task, DiffusionConfig())
    assert class_prompts(toy_task, DiffusionConfig(template="a photo of a {class}")) == \
        ["a photo of a disc", "a photo of a square"]
    with pytest.raises(DiffusionError, match="missing"):
        class_prompts(toy_task, DiffusionConfig(prompts={"disc": "x"}))
    for bad in (dict(keep=(2, 2, 1), samples=(1, 2, 3)), dict(keep=(2,), samples=(5,)), dict(samples=(0,)),
                dict(weighting="snr"), dict(keep=(3, 1), samples=(50, 10))):
        with pytest.raises(DiffusionError, match="diffusion\\."):
            DiffusionConfig(**bad)


def test_cli_runs_the_classifier_and_reports_bad_input(tiny_trained, toy_task, tmp_path, eval_cli):
    """``python -m eval diffusion`` (forked from a warm server, tests/conftest.py: eval_cli)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    base = ["diffusion", f"model=diffusion:{tiny_trained[0]}", f"task={toy_task.root}",
            f"out={tmp_path / 'res'}", "diffusion.samples=[4]", "diffusion.n_boot=200", "progress=false", "threads=1"]
    r = eval_cli(*base, "diffusion.template='a {class}'", env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "accuracy" in r.stdout and len(R.read_results(tmp_path / "res")) == N_HELD_OUT
    r = eval_cli(*base, env=env, timeout=300)  # no prompts for this task
    assert r.returncode == 2 and r.stderr.startswith("error:") and "template" in r.stderr, r.stderr
    with pytest.raises(DiffusionError, match="nope: no such folder"):
        load_diffusion(str(tmp_path / "nope"))


def test_interrupted_run_resumes_at_the_first_unfinished_image(toy_task, tmp_path, monkeypatch):
    """Per-image checkpoints: a run killed after 3 images evaluates only the rest when re-run, and its
    predictions equal an uninterrupted run's."""
    import eval.diffusion as D

    folder = tmp_path / "random"
    build_tiny(folder, steps=0, seed=5)
    model = load_diffusion(str(folder))
    cfg = _cfg(samples=(4,))
    ref = run_diffusion(toy_task, model, "diffusion:tiny", cfg, tmp_path / "ref", progress=False)
    real, calls = D.classify_latent, []

    def dies_after_three(*a, **k):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(D, "classify_latent", dies_after_three)
    with pytest.raises(KeyboardInterrupt):
        run_diffusion(toy_task, model, "diffusion:tiny", cfg, tmp_path / "res", progress=False)
    assert len(list((tmp_path / "res" / "diffusion").glob("*.partial/*.json"))) == 3
    counted = []
    monkeypatch.setattr(D, "classify_latent", lambda *a, **k: counted.append(1) or real(*a, **k))
    run_diffusion(toy_task, model, "diffusion:tiny", cfg, tmp_path / "res", progress=False)
    assert len(counted) == N_HELD_OUT - 3
    a, b = R.read_results(tmp_path / "ref"), R.read_results(tmp_path / "res")
    assert a["response"].tolist() == b["response"].tolist() and np.allclose(a["score"], b["score"])
    assert not list((tmp_path / "res" / "diffusion").glob("*.partial"))  # cleaned up once the run is written
    assert float(ref["accuracy"].iloc[0]) == float(R.read_results(tmp_path / "res", "summary")["accuracy"].iloc[0])


def test_scheduler_timesteps_reads_the_config_alone(tmp_path):
    """T from ``scheduler/scheduler_config.json`` (trained_betas win over num_train_timesteps, as in diffusers);
    None whenever the file cannot say, so the loaded model decides."""
    import json

    def folder(name, text):
        (tmp_path / name / "scheduler").mkdir(parents=True)
        (tmp_path / name / "scheduler" / "scheduler_config.json").write_text(text)
        return str(tmp_path / name)

    assert scheduler_timesteps(folder("n", json.dumps({"num_train_timesteps": 500}))) == 500
    assert scheduler_timesteps(folder("b", json.dumps({"num_train_timesteps": 1000, "trained_betas": [0.1] * 7}))) == 7
    for name, text in (("none", json.dumps({"beta_start": 0.1})), ("bad", "{not json"), ("neg", '{"num_train_timesteps": -3}'),
                       ("bool", '{"num_train_timesteps": true}'), ("list", "[1, 2]")):
        assert scheduler_timesteps(folder(name, text)) is None, name
    assert scheduler_timesteps(str(tmp_path / "absent")) is None
    assert scheduler_timesteps("some/hub-id") is None

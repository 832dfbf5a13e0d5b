"""Embedding cache, linear probes, fine-tuning and the append-only results folder."""
import multiprocessing as mp
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from eval import results as R
from infra.safe_load import load_tensors
from eval.embeddings import Embeddings, get_embeddings
from eval.finetune import FinetuneConfig, run_finetune
from eval.probe import ProbeConfig, run_probe, seed_summary, train_probe
from eval.tasks import TaskData, load_task
from eval.zoo import WeightsSpec, load_model


def synthetic_task(n=600, d=32, seed=0, permute=False):
    """Embeddings where class 1 is shifted along one direction (learnable), split 60/20/20."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[:, 0] += 2.5 * (2 * y - 1)
    labels = rng.permutation(y) if permute else y
    split = np.array(["train"] * int(0.6 * n) + ["val"] * int(0.2 * n) + ["test"] * (n - int(0.8 * n)))
    ids = [f"img{i:04d}.png" for i in range(n)]
    items = pd.DataFrame({"item_id": ids, "path": ids, "label": labels, "label_name": labels.astype(str),
                          "split": split, "group": ids})
    return (TaskData(Path("."), "synthetic", "test", items, ["0", "1"], ("test",)),
            Embeddings(ids, {"pooled": X}, "k", False))


def test_probe_learns_signal_and_is_at_chance_on_permuted_labels(tmp_path):
    cfg = ProbeConfig(epochs=30, seeds=(0, 1), n_boot=1000)  # the paper's lr needs thousands of steps
    task, emb = synthetic_task(n=6000)
    s = run_probe(task, emb, "synthetic:model", cfg, tmp_path / "a", progress=False)
    assert (s["accuracy"] > 0.95).all()
    task_p, emb_p = synthetic_task(n=6000, permute=True)
    sp = run_probe(task_p, emb_p, "synthetic:model", cfg, tmp_path / "b", progress=False)
    assert sp["accuracy"].mean() == pytest.approx(0.5, abs=0.08)
    assert (sp["accuracy_ci_low"] < 0.5).all()  # chance lies inside every seed's interval
    ss = seed_summary(s)
    assert ss.loc[0, "seeds"] == 2 and ss.loc[0, "accuracy_ci_low"] <= ss.loc[0, "accuracy_mean"]


def test_probe_early_stopping_and_resume(tmp_path):
    task, emb = synthetic_task()
    tr, va = task.split("train"), task.split("val")
    X = emb.features["pooled"]
    fit = train_probe(X[:360], tr["label"].to_numpy(), X[360:480], va["label"].to_numpy(), 2,
                      ProbeConfig(epochs=200, patience=3, lr=1e-2), seed=0)
    assert fit.epochs_run < 200 and fit.best_epoch == fit.epochs_run - 4  # stopped 3 epochs after the best
    cfg = ProbeConfig(epochs=5, seeds=(0,), n_boot=200)
    first = run_probe(task, emb, "m", cfg, tmp_path, progress=False)
    parts = sorted((tmp_path / "trials").iterdir())
    mtime = parts[0].stat().st_mtime_ns
    again = run_probe(task, emb, "m", cfg, tmp_path, progress=False)  # finished run: skipped, not rewritten
    assert parts[0].stat().st_mtime_ns == mtime
    pd.testing.assert_frame_equal(first, again)


def test_trial_schema_and_parallel_safe_appends(tmp_path):
    task, emb = synthetic_task(n=100)
    run_probe(task, emb, "m", ProbeConfig(epochs=2, seeds=(0,), n_boot=200), tmp_path, progress=False)
    t = R.read_results(tmp_path, "trials")
    assert list(t.columns)[:len(R.TRIAL_DTYPES)] == list(R.TRIAL_DTYPES)
    assert {k: str(t.dtypes[k]) for k in R.TRIAL_DTYPES} == R.TRIAL_DTYPES
    assert (t["correct"] == (t["label"] == t["response"])).all() and t["score"].between(0.5, 1).all()

    rows = t.iloc[:3]

    def writer(i):
        for j in range(10):
            R.write_part(tmp_path / "par", "trials", f"run{i}_{j}", rows.assign(run_id=f"run{i}_{j}"))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    [th.start() for th in threads]
    [th.join() for th in threads]
    assert len(R.read_results(tmp_path / "par", "trials")) == 4 * 10 * 3
    assert not R.write_part(tmp_path / "par", "trials", "run0_0", rows)  # never overwrites a part
    assert not list((tmp_path / "par" / "trials").glob(".*"))  # no temporary files left


def _image_folder(root: Path, n=12, size=48):
    """Two classes that differ in brightness: <split>/<class>/<img>.png."""
    rng = np.random.default_rng(0)
    for split, k in (("train", n), ("val", n // 2), ("test", n // 2)):
        for c, level in (("dark", 60), ("bright", 190)):
            d = root / split / c
            d.mkdir(parents=True)
            for i in range(k):
                a = np.clip(rng.normal(level, 30, (size, size, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(a).save(d / f"{i:03d}.png")
    return root


def _count_forward(module):
    calls = []
    module.register_forward_hook(lambda *a: calls.append(1))
    return calls


def test_cache_hit_without_forward_and_key_follows_content(tmp_path):
    task = load_task(_image_folder(tmp_path / "ds"))
    ids, paths = task.image_files()
    m = load_model("timm:test_resnet")
    calls = _count_forward(m.module)
    first = get_embeddings(m, ids, paths, tmp_path / "cache", batch_size=16, progress=False)
    assert not first.from_cache and len(calls) > 0
    calls.clear()
    second = get_embeddings(m, ids, paths, tmp_path / "cache", batch_size=16, progress=False)
    assert second.from_cache and calls == []  # no model forward the second time
    assert np.array_equal(first.features["pooled"], second.features["pooled"])
    half = get_embeddings(m, ids, paths, tmp_path / "cache", dtype="float16", progress=False)
    assert not half.from_cache and half.features["pooled"].dtype == np.float16
    Image.fromarray(np.zeros((48, 48, 3), np.uint8)).save(paths[0])  # change one image's contents
    third = get_embeddings(m, ids, paths, tmp_path / "cache", progress=False)
    assert not third.from_cache and third.key != first.key
    other = load_model("timm:test_resnet", preprocess="shorter_side")
    assert get_embeddings(other, ids, paths, tmp_path / "cache", progress=False).key != third.key


def _worker(args):
    root, cache = args
    task = load_task(root)
    m = load_model("timm:test_resnet")
    e = get_embeddings(m, *task.image_files(), cache, progress=False)
    return e.from_cache, np.asarray(e.features["pooled"]).sum()


def test_two_processes_same_key_compute_once(tmp_path):
    root = _image_folder(tmp_path / "ds")
    with mp.get_context("spawn").Pool(2) as pool:
        out = pool.map(_worker, [(root, tmp_path / "cache")] * 2)
    assert sorted(o[0] for o in out) == [False, True]  # one computed, the other waited and read
    assert out[0][1] == pytest.approx(out[1][1])
    entries = [p for p in (tmp_path / "cache").rglob("meta.json")]
    assert len(entries) == 1 and not list((tmp_path / "cache").rglob("*.partial"))


def test_finetune_learns_and_resumes_identically(tmp_path, one_thread):
    task = load_task(_image_folder(tmp_path / "ds", n=16, size=32))
    cfg = FinetuneConfig(epochs=3, lr=1e-3, batch_size=8, patience=0, n_boot=200)
    m = load_model("timm:test_resnet", preprocess="shorter_side")
    straight = run_finetune(task, m, "timm:test_resnet", cfg, tmp_path / "a", progress=False)
    assert run_finetune(task, m, "timm:test_resnet", cfg, tmp_path / "b", epochs_per_invocation=2,
                        progress=False) is None  # paused after 2 epochs
    ck = load_tensors(next((tmp_path / "b" / "checkpoints").iterdir()) / "last.pt")  # the one safe loader reads it
    assert ck["state"]["epoch"] == 1
    resumed = run_finetune(task, m, "timm:test_resnet", cfg, tmp_path / "b", progress=False)
    cols = ["split", "accuracy", "best_epoch", "epochs_run", "val_accuracy"]
    pd.testing.assert_frame_equal(straight[cols], resumed[cols])
    ta, tb = R.read_results(tmp_path / "a"), R.read_results(tmp_path / "b")
    np.testing.assert_allclose(ta["score"], tb["score"], rtol=1e-5)
    assert straight.loc[0, "accuracy"] >= 0.9  # brightness is easy to learn
    hist = load_tensors(next((tmp_path / "a" / "checkpoints").iterdir()) / "last.pt")["state"]["history"]
    assert len(hist) == 3 and hist[-1]["train_accuracy"] >= 0.8  # the training curve is recorded per epoch
    assert hist[-1]["train_loss"] < hist[0]["train_loss"]
    assert not any(p.requires_grad for p in m.module.parameters())  # the loaded model is left frozen


@pytest.fixture
def one_thread():
    """One intra-op torch thread for the test: a small CNN's ops on 32-image batches are tiny, and on a shared
    2-core machine a second thread mostly waits for its descheduled partner (the digit CNN's 25 epochs: 286 s
    with the default 2 threads, ~50 s with one, measured on the same loaded machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_probe_on_a_network_the_test_trains(tmp_path, one_thread):
    """Train a small CNN on generated digits (the abutting-grating dataset's original condition), load it as
    a user model from its weights file and probe it: the probe recovers about the network's own test
    accuracy, far above chance and above the same architecture with random weights."""
    from eval.examples import small_cnn
    from tasks.stimuli.writer import write_dataset

    write_dataset("abutting_digits", tmp_path / "digits", {"n_images": 1000, "intervals": [4],
                                                           "directions": ["horizontal"]}, progress=False)
    task = load_task(tmp_path / "digits", target="label", conditions=["original"])
    assert set(task.classes) == set("0123456789")
    ref = load_model("module:eval.examples:small_cnn")

    def batch(split):
        t = task.split(split)
        return torch.stack([ref.transform(Image.open(p)) for p in t["path"]]), torch.tensor(t["label"].to_numpy())

    X, y = batch("train")
    torch.manual_seed(0)
    net = small_cnn()
    head = torch.nn.Linear(net.num_features, 10)
    opt = torch.optim.Adam(list(net.parameters()) + list(head.parameters()), lr=3e-3)
    for _ in range(25):
        net.train()
        for i in range(0, len(X), 32):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(head(net(X[i:i + 32])), y[i:i + 32]).backward()
            opt.step()
    net.eval()
    Xt, yt = batch("test")
    with torch.no_grad():
        own = float((head(net(Xt)).argmax(1) == yt).float().mean())
    torch.save(net.state_dict(), tmp_path / "small_cnn.pth")
    pcfg = ProbeConfig(epochs=60, lr=1e-2, patience=0, seeds=(0,), n_boot=200)
    accs = {}
    for name, w in (("trained", WeightsSpec(file=str(tmp_path / "small_cnn.pth"))), ("random", WeightsSpec())):
        m = load_model("module:eval.examples:small_cnn", w)
        emb = get_embeddings(m, *task.image_files(), tmp_path / "cache", progress=False)
        s = run_probe(task, emb, f"small_cnn_{name}", pcfg, tmp_path / "res", progress=False)
        accs[name] = float(s["accuracy"].iloc[0])
    assert own > 0.6 and accs["trained"] == pytest.approx(own, abs=0.1), (own, accs)
    assert accs["trained"] > accs["random"] + 0.15, accs


def test_extraction_with_decoding_workers_equals_the_in_process_reference(tmp_path):
    from eval.embeddings import extract

    rng = np.random.default_rng(0)
    paths = []
    for i in range(11):  # not a multiple of the batch size; one non-square image
        h, w = (40, 56) if i == 7 else (48, 48)
        p = tmp_path / f"im{i}.png"
        Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(p)
        paths.append(str(p))
    m = load_model("timm:test_resnet", preprocess="shorter_side", taps=("layer1",))
    ref = extract(m, paths, batch_size=4, progress=False, workers=0)
    fast = extract(m, paths, batch_size=4, progress=False, workers=2)
    assert ref.keys() == fast.keys() == {"pooled", "layer1"}
    for k in ref:
        np.testing.assert_array_equal(ref[k], fast[k])


def test_seeded_dropout_matches_torch_dropout_contract():
    """The probe's NumPy-mask dropout (fast path) against nn.Dropout (its twin): same keep rate, same 1/(1-p)
    scaling of kept inputs, identity in eval mode; and the same seed gives the same masks."""
    import numpy as np
    import torch

    from eval.probe import make_head

    x = torch.ones(256, 512)
    fast, twin = make_head(512, 2, 0.3, seed=7)[1], make_head(512, 2, 0.3)[1]
    torch.manual_seed(0)
    for drop in (fast, twin):
        drop.train()
        y = drop(x)
        kept = (y != 0).float().mean().item()
        assert abs(kept - 0.7) < 0.01, kept
        assert torch.allclose(y[y != 0], torch.full_like(y[y != 0], 1 / 0.7))
        drop.eval()
        assert torch.equal(drop(x), x)
    a, b = make_head(512, 2, 0.3, seed=7)[1], make_head(512, 2, 0.3, seed=7)[1]
    assert torch.equal(a(x), b(x)) and not torch.equal(a(x), make_head(512, 2, 0.3, seed=8)[1](x))
    assert np.isclose(make_head(512, 2, 0.0, seed=1)[1](x).sum().item(), x.sum().item())

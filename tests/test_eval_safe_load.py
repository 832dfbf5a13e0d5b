"""Issue 34 item 1: no file read by Vantage can run code. Every site that reads a tensor file (resume
checkpoints of ``eval decoder`` and ``eval finetune``, ``weights=`` files of timm, ``module:`` and open_clip
models, gsplat ``.pt`` scenes) is given a planted pickle whose ``__reduce__`` would create a marker file: the
marker never appears, and the user gets a clear refusal (CLIs: one ``error:`` line, exit status 2)."""
from __future__ import annotations

import collections
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

torch = pytest.importorskip("torch")

from infra.safe_load import CheckpointError, UnsafeFileError, load_tensors  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class _Exploit:
    """Unpickling this runs ``touch <marker>`` (what a planted checkpoint in a shared results folder holds)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class Plain:
    """A harmless class a library might have registered with ``torch.serialization.add_safe_globals``."""

    def __init__(self, x=1):
        self.x = x


def plant(path: Path, marker: Path, how: str = "torch") -> Path:
    """Write a malicious file at ``path``: a ``torch.save`` zip (``torch``) or a bare pickle (``pickle``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"state_dict": {"w": _Exploit(marker)}, "digest": _Exploit(marker)}
    if how == "torch":
        torch.save(payload, path)
    else:
        path.write_bytes(pickle.dumps(payload))
    return path


def _image_folder(root: Path, n: int = 3) -> Path:
    rng = np.random.default_rng(0)
    for split in ("train", "val", "test"):
        for c in ("0", "1"):
            (root / split / c).mkdir(parents=True, exist_ok=True)
            for i in range(n):
                Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(root / split / c / f"{i}.png")
    return root


# ------------------------------------------------------------------------------------------ the loader


@pytest.mark.parametrize("how", ["torch", "pickle"])
def test_load_tensors_refuses_a_planted_pickle_without_running_it(tmp_path, how):
    marker = tmp_path / "pwned"
    f = plant(tmp_path / "evil.pt", marker, how)
    with pytest.raises(UnsafeFileError, match=r"evil\.pt: refused to load this checkpoint") as e:
        load_tensors(f, "weights file")
    assert not marker.exists(), "the planted pickle's code ran"
    msg = str(e.value)
    assert "weights file" in msg and "torch.save(model.state_dict(), path)" in msg
    assert "weights_only=False" not in msg  # torch's own advice (retry unsafely) is not passed on


def test_load_tensors_refuses_registered_classes_torchscript_and_junk(tmp_path):
    # a class some library registered as "safe" with torch still is not a tensor or a plain container
    f = tmp_path / "obj.pt"
    with torch.serialization.safe_globals([Plain]):
        torch.save({"x": Plain()}, f)
        with pytest.raises(UnsafeFileError, match=r"holds a .*Plain"):
            load_tensors(f)
    ts = tmp_path / "script.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), ts)  # TorchScript archives run code when loaded
    with pytest.raises(UnsafeFileError, match="refused"):
        load_tensors(ts)
    (tmp_path / "junk.pt").write_text("not a checkpoint")
    with pytest.raises(UnsafeFileError, match="junk.pt"):
        load_tensors(tmp_path / "junk.pt")
    with pytest.raises(CheckpointError, match="no such file"):
        load_tensors(tmp_path / "absent.pt")
    assert issubclass(UnsafeFileError, ValueError)  # the CLIs turn it into an error: line


def test_load_tensors_reads_genuine_checkpoints_unchanged(tmp_path):
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    net(torch.rand(2, 3, 8, 8)).sum().backward()
    opt.step()
    ck = {"model": net.state_dict(), "optimizer": opt.state_dict(), "generator": torch.Generator().get_state(),
          "state": {"epoch": 3, "best": None, "loss": float("inf"), "history": [{"epoch": 0, "a": 0.5}]},
          "size": torch.Size([2, 3]), "dtype": torch.float16, "ordered": collections.OrderedDict(a=torch.ones(2))}
    torch.save(ck, tmp_path / "ck.pt")
    back = load_tensors(tmp_path / "ck.pt")
    assert back["state"] == ck["state"] and back["size"] == ck["size"] and back["dtype"] is torch.float16
    assert all(torch.equal(back["model"][k], v) for k, v in ck["model"].items())
    assert back["optimizer"]["param_groups"] == ck["optimizer"]["param_groups"]
    from safetensors.torch import save_file

    save_file({"w": torch.arange(4.0)}, str(tmp_path / "w.safetensors"))
    assert torch.equal(load_tensors(tmp_path / "w.safetensors")["w"], torch.arange(4.0))


# ------------------------------------------------------------------------------------ each call site


def test_decoder_resume_checkpoint_is_refused(tmp_path):
    from eval.decoders import DecoderConfig, train_decoders

    rng = np.random.default_rng(0)
    X = {"a": rng.normal(size=(40, 4)).astype(np.float32)}
    y = (X["a"][:, 0] > 0).astype(int)
    split = np.array(["train"] * 30 + ["val"] * 10)
    marker = tmp_path / "pwned"
    ck = plant(tmp_path / "checkpoints" / "run" / "decoders.pt", marker)
    with pytest.raises(UnsafeFileError, match="decoder resume checkpoint"):
        train_decoders(X, y, split, "classification", 2, DecoderConfig(targets=("y",), epochs=2), seed=0, checkpoint=ck)
    assert not marker.exists(), "the planted decoders.pt ran its code (torch.load weights_only=False)"


def test_finetune_best_weights_are_refused(tmp_path):
    from eval.finetune import FinetuneConfig, run_finetune
    from eval.tasks import load_task
    from eval.zoo import WeightsSpec, load_model

    task = load_task(_image_folder(tmp_path / "ift"))
    model = load_model("timm:test_resnet", WeightsSpec(pretrained=False, file=None, init_seed=0), "model")
    cfg = FinetuneConfig(epochs=2, batch_size=4, n_boot=100, patience=0)
    assert run_finetune(task, model, "timm:test_resnet", cfg, tmp_path / "r", epochs_per_invocation=1,
                        progress=False) is None
    (best,) = list((tmp_path / "r" / "checkpoints").glob("*/best.pt"))
    marker = tmp_path / "pwned"
    plant(best, marker)
    with pytest.raises(RuntimeError, match="best-epoch weights .*refused to load this checkpoint"):
        run_finetune(task, model, "timm:test_resnet", cfg, tmp_path / "r", progress=False)
    assert not marker.exists()


@pytest.mark.parametrize("model", ["timm:test_resnet", "module:eval.examples:small_cnn", "open_clip:RN50"])
def test_weights_file_of_every_model_source_is_refused(tmp_path, model):
    from eval.zoo import WeightsSpec, load_model

    if model.startswith("open_clip"):
        pytest.importorskip("open_clip")
    marker = tmp_path / "pwned"
    f = plant(tmp_path / "weights.pth", marker, "pickle")
    with pytest.raises(ValueError, match=r"weights file .*weights\.pth: refused to load this checkpoint"):
        load_model(model, WeightsSpec(pretrained=False, file=str(f), init_seed=0))
    assert not marker.exists()


def test_gsplat_scene_checkpoint_is_refused(tmp_path):
    from scenes.ply import read_gsplat_checkpoint
    from scenes.gaussians import SceneError

    marker = tmp_path / "pwned"
    f = plant(tmp_path / "scene.pt", marker)
    with pytest.raises(SceneError, match="scene.pt"):
        read_gsplat_checkpoint(f)
    assert not marker.exists()


def _env(tmp_path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VANTAGE_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    env.pop("HYDRA_FULL_ERROR", None)
    return env


def _refused(p, name: str) -> None:
    """A CLI's outcome: exit 2, no traceback, the last ``error:`` line names ``name`` and the refusal."""
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    last = [ln for ln in p.stderr.splitlines() if ln.startswith("error: ")]
    assert last and name in last[-1] and "refused to load this checkpoint" in last[-1], p.stderr[-2000:]


def test_probe_cli_refuses_planted_weights_with_an_error_line(tmp_path, eval_cli):
    """``eval probe weights=<planted pickle>`` was refused by torch but ended in a traceback (the command runs
    in a process forked from a warm server, tests/conftest.py: eval_cli)."""
    marker = tmp_path / "pwned"
    weights = plant(tmp_path / "evil.pth", marker)
    p = eval_cli("probe", "model=timm:test_resnet", f"weights={weights}", f"task={_image_folder(tmp_path / 'ift')}",
                 f"out={tmp_path / 'p'}", "progress=false", env=_env(tmp_path), cwd=tmp_path, timeout=300)
    _refused(p, weights.name)
    assert not marker.exists() and not (tmp_path / "p").exists()


@pytest.mark.slow
def test_decoder_cli_refuses_a_planted_resume_checkpoint(tmp_path):
    """``eval decoder`` resuming over a planted ``checkpoints/<run>/decoders.pt`` ran its code; now exit 2 with
    an ``error:`` line naming the file (three CLI runs: about a minute of CPU, hence slow; the library call
    is tested above)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_eval_decoders import disc_dataset

    disc_dataset(tmp_path / "discs", n_sets=30)
    marker = tmp_path / "pwned"
    dec = [sys.executable, "-m", "eval", "decoder", "model=module:eval.examples:small_cnn", "pretrained=false",
           f"task={tmp_path / 'discs'}", "progress=false", "decoder.targets=[size]", "decoder.epochs=3",
           "decoder.n_boot=100", f"out={tmp_path / 'r'}"]
    first = subprocess.run(dec + ["epochs_per_invocation=1"], capture_output=True, text=True, env=_env(tmp_path),
                           timeout=300)
    assert first.returncode == 0 and "paused" in first.stdout, first.stderr
    (ck,) = list((tmp_path / "r" / "checkpoints").glob("*/decoders.pt"))
    plant(ck, marker)
    _refused(subprocess.run(dec, capture_output=True, text=True, env=_env(tmp_path), timeout=300), "decoders.pt")
    assert not marker.exists(), "the planted decoders.pt ran its code"

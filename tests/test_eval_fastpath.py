"""Extraction's fast path against its plain reference twin: batch norms folded into convolutions
(eval.fold), the uint8 decode and batched normalisation (eval.embeddings), and whole extractions."""
import numpy as np
import pytest
import timm
import torch
from PIL import Image

from eval.embeddings import EmbeddingError, Uint8Preprocess, decode_uint8, extract, load_image, preprocessor
from eval.fold import fold_batchnorm
from eval.zoo import WeightsSpec, load_model, shorter_side_transform


def _with_real_statistics(name: str, path, seed: int = 0):
    """A checkpoint of timm ``name`` whose batch norms have non-trivial statistics and affine parameters
    (random init has mean 0, var 1, gamma 1, beta 0, where folding would be nearly the identity)."""
    g = torch.Generator().manual_seed(seed)
    m = timm.create_model(name, num_classes=0)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                c = mod.num_features
                mod.running_mean.copy_(torch.rand(c, generator=g) - 0.5)
                mod.running_var.copy_(0.3 + 2 * torch.rand(c, generator=g))
                mod.weight.copy_(0.5 + torch.rand(c, generator=g))
                mod.bias.copy_(0.4 * torch.rand(c, generator=g) - 0.2)
    torch.save(m.state_dict(), path)
    return m


def _pngs(tmp_path, n=5):
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        h, w = (64, 48) if i == 3 else (72, 72)  # one non-square image: its own sub-batch
        a = (rng.random((h, w, 3)) * 255).astype(np.uint8)
        a[h // 4: h // 2, w // 4: w // 2] = rng.integers(0, 255, 3)
        p = tmp_path / f"im{i}.png"
        Image.fromarray(a).save(p)
        paths.append(str(p))
    return paths


@pytest.mark.parametrize("name", ["resnet18", "tf_efficientnet_lite0"])  # plain convs; depthwise + BN-act
def test_folded_model_gives_the_plain_features(tmp_path, name):
    _with_real_statistics(name, tmp_path / "w.pth")
    spec = WeightsSpec(file=str(tmp_path / "w.pth"))
    fast = load_model(f"timm:{name}", spec, preprocess="shorter_side", fast=True)
    plain = load_model(f"timm:{name}", spec, preprocess="shorter_side", fast=False)
    n_bn = sum(isinstance(m, torch.nn.BatchNorm2d) for m in plain.module.modules())
    assert plain.folded_bn == 0 and fast.folded_bn == n_bn > 0  # every conv -> BN pair of these models
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in fast.module.modules())
    x = torch.randn(3, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    a, b = fast.features(x)["pooled"], plain.features(x)["pooled"]
    assert (a - b).abs().max() <= 1e-4 * b.abs().max()
    assert not torch.equal(a, b)  # really a different computation, not the same module
    # the cache key says which path made an entry; the plain path keeps the key of earlier versions
    assert fast.identity()["fold_bn"] == n_bn and "fold_bn" not in plain.identity()
    assert fast.run_identity() == plain.run_identity()


def test_taps_keep_their_values_and_tapped_convolutions_are_not_folded(tmp_path):
    _with_real_statistics("resnet18", tmp_path / "w.pth")
    spec = WeightsSpec(file=str(tmp_path / "w.pth"))
    taps = ["layer1", "layer2.0.conv1", "layer2.0.bn1"]
    fast = load_model("timm:resnet18", spec, taps=taps, fast=True)
    plain = load_model("timm:resnet18", spec, taps=taps, fast=False)
    assert fast.folded_bn == 19  # all but layer2.0.conv1's batch norm
    x = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(2))
    fa, fb = fast.features(x), plain.features(x)
    for k in ["pooled", *taps]:
        assert (fa[k] - fb[k]).abs().max() <= 1e-4 * fb[k].abs().max(), k


def test_only_safe_conv_bn_pairs_are_folded():
    class Shared(torch.nn.Module):  # the conv output is also read by the residual: folding would change it
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(3, 3, 3, padding=1), torch.nn.BatchNorm2d(3)

        def forward(self, x):
            y = self.conv(x)
            return self.bn(y) + y

    class Untraceable(Shared):  # data-dependent control flow: torch.fx cannot trace it
        def forward(self, x):
            return self.bn(self.conv(x)) if x.sum() > 0 else x

    class Training(Shared):
        def forward(self, x):
            return self.bn(self.conv(x))

    x = torch.randn(2, 3, 8, 8)
    for cls, mode in ((Shared, "eval"), (Untraceable, "eval"), (Training, "train")):
        m = cls()
        m.bn.running_mean.fill_(0.3)
        m.eval() if mode == "eval" else m.train()
        before = m(x).detach() if mode == "eval" else None
        assert fold_batchnorm(m) == 0, cls.__name__
        assert isinstance(m.bn, torch.nn.BatchNorm2d)
        if before is not None:
            assert torch.equal(m(x), before)
    m = Training().eval()
    m.bn.running_mean.fill_(0.3)
    before = m(x).detach()
    assert fold_batchnorm(m) == 1 and not isinstance(m.bn, torch.nn.BatchNorm2d)
    torch.testing.assert_close(m(x), before, rtol=1e-5, atol=1e-6)


def test_uint8_decode_gives_the_reference_pixels(tmp_path):
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    cases = {"rgb.png": Image.fromarray(rgb), "rgba.png": Image.fromarray(np.dstack([rgb, rgb[..., :1]]), "RGBA"),
             "l.png": Image.fromarray(rgb[..., 0]), "p.png": Image.fromarray(rgb).convert("P"),
             "i16.png": Image.fromarray((rgb[..., 0].astype(np.uint16) * 257)), "rgb.jpg": Image.fromarray(rgb)}
    for name, im in cases.items():
        im.save(tmp_path / name)
        fast, ref = decode_uint8(str(tmp_path / name)), load_image(str(tmp_path / name))
        assert fast.mode == ref.mode == "RGB" and np.array_equal(np.asarray(fast), np.asarray(ref)), name
    (tmp_path / "bad.png").write_bytes((tmp_path / "rgb.png").read_bytes()[:60])  # truncated
    with pytest.raises(EmbeddingError, match="bad.png"):
        decode_uint8(str(tmp_path / "bad.png"))


def test_uint8_preprocessing_is_bitwise_the_transform(tmp_path):
    paths = _pngs(tmp_path)
    m = load_model("timm:test_resnet", fast=True)  # timm's eval transform: resize, centre crop, normalise
    cfg = dict(m.data_config, input_size=(3, 40, 40))
    for transform in (m.transform, shorter_side_transform(cfg)):
        fast = Uint8Preprocess.from_transform(transform)
        assert fast is not None
        for group in (paths[:3], paths[3:4]):
            ref = torch.stack([transform(load_image(p)) for p in group])
            got = fast.batch([fast(p) for p in group])
            assert got.is_contiguous(memory_format=torch.channels_last)
            assert torch.equal(got, ref)
    from torchvision import transforms as T

    assert Uint8Preprocess.from_transform(T.Compose([T.Lambda(lambda im: im), T.ToTensor(), T.Normalize(0, 1)])) is None
    assert Uint8Preprocess.from_transform(lambda im: im) is None
    plain = load_model("timm:test_resnet", fast=False)
    assert not isinstance(preprocessor(plain), Uint8Preprocess) and isinstance(preprocessor(m), Uint8Preprocess)


@pytest.mark.parametrize("workers", [0, 2])
def test_fast_extraction_matches_the_plain_one(tmp_path, workers):
    _with_real_statistics("tf_efficientnet_lite0", tmp_path / "w.pth")
    spec = WeightsSpec(file=str(tmp_path / "w.pth"))
    paths = _pngs(tmp_path, 6)
    fast = load_model("timm:tf_efficientnet_lite0", spec, preprocess="shorter_side", fast=True)
    plain = load_model("timm:tf_efficientnet_lite0", spec, preprocess="shorter_side", fast=False)
    a = extract(fast, paths, batch_size=4, progress=False, workers=workers)["pooled"]
    b = extract(plain, paths, batch_size=4, progress=False, workers=0)["pooled"]
    assert a.shape == b.shape == (6, fast.module.num_features)
    assert np.abs(a - b).max() <= 1e-4 * np.abs(b).max()


@pytest.mark.parametrize("p", [0.3, 0.5, 0.1, 1e-9, 0.9999999])
def test_integer_dropout_masks_are_the_float_draws(p):
    from eval.probe import Uint32Masks

    ref, fast = np.random.default_rng(11), Uint32Masks(np.random.default_rng(11), p)
    for shape in [(128, 64), (3, 5), (7, 1), (1,), (56, 64), (5, 3), (2, 2), (128, 64)]:  # odd sizes carry a half
        assert np.array_equal(fast.keep(shape), ref.random(shape, dtype=np.float32) >= p), shape


def test_probe_with_integer_masks_trains_the_same_head(monkeypatch):
    from eval import probe as P

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    X = rng.normal(size=(300, 33)).astype(np.float32) + y[:, None] * 0.5  # odd width: halves carried over
    cfg = P.ProbeConfig(epochs=4, batch_size=37, patience=0, seeds=(0,))
    heads = []
    for fast in (True, False):  # the fast masks and per-batch gathers, then both references
        monkeypatch.setattr(P, "FAST_MASKS", fast)
        monkeypatch.setattr(P, "GATHER_PER_BATCH", fast)
        fit = P.train_probe(X[:200], y[:200], X[200:], y[200:], 2, cfg, seed=3)
        heads.append((fit.head[2].weight.detach().clone(), fit.history))
    assert torch.equal(heads[0][0], heads[1][0]) and heads[0][1] == heads[1][1]


def test_only_extraction_jobs_get_the_fast_path():
    from eval.cli import _load

    c = {"model": "timm:test_resnet", "pretrained": False, "weights": None, "init_seed": 0, "preprocess": "auto",
         "taps": [], "device": "cpu", "hub": "offline", "model_kwargs": {}, "fast": True}
    assert _load(c, "threedpc", extraction_only=True).folded_bn > 0  # probe, decoder
    assert _load(c, "threedpc").folded_bn == 0  # fine-tuning trains the module; similarity hooks any leaf
    assert _load(dict(c, fast=False), "threedpc", extraction_only=True).folded_bn == 0
    assert load_model("timm:test_resnet").folded_bn == 0  # the API default is the plain module

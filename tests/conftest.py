from pathlib import Path

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


# ---------------------------------------------------------------- built fixtures shared by the whole session
# Expensive artefacts (a 3D-PC build costs ~80 s of CPU, mostly placement sampling and the VPT-Strategy
# sequence, not pixels) are built once per test session and shared by every test that only reads them; a
# test that changes one works on a copy (shutil.copytree). Under pytest-xdist every worker runs its own
# session: the artefact lives under the run's base temporary folder (shared by the workers of one run) and
# a file lock makes the first worker build it while the other waits and reuses it.

TINY_3DPC = dict(scenes=["hydrant_01", "hydrant_02", "couch_03", "motorcycle_04"], settings=4, depth_settings=2, frames=8,
                 size=64, human_n=4, strategy_steps=4, workers=1)
"""The smallest 3D-PC build that has every part: train/val/test scenes, depth-only settings (as the default
build has them), a VPT-Strategy scene, a balanced human set; 64 px (sizes are not what these tests check).
The strategy scene is motorcycle_04: of the ten catalogue _04 scenes the quickest to find a sequence at this
size (29 tries, 5 CPU-s; plant_04 took 15 CPU-s)."""


def shared_artefact(tmp_path_factory, name: str, make) -> Path:
    """``<run base temp>/shared/<name>``, made by ``make(folder)`` once per run (all xdist workers) under an
    fcntl lock; a finished marker (``.done`` beside it) tells later callers it is complete."""
    import fcntl
    import os

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # <basetemp>/popen-gwN -> the run's <basetemp>, common to all workers
    root = base / "shared"
    root.mkdir(exist_ok=True)
    folder, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            make(folder)
            done.write_text("ok")
    return folder


@pytest.fixture(scope="session")
def tiny_3dpc(tmp_path_factory):
    """A finished TINY_3DPC build, read-only for the tests (copy it before changing anything)."""
    from tasks.threedpc import build, config_from_dict

    return shared_artefact(tmp_path_factory, "tiny_3dpc",
                           lambda out: build(config_from_dict({**TINY_3DPC, "out": str(out)}), progress=False))


# The order in which pytest-xdist hands test files to its workers (``make test``: ``--dist loadfile
# --no-loadscope-reorder``): longest first, so that the last files to run are short and no worker idles while
# the other finishes a long one (the longest-processing-time rule). test_threedpc.py comes first: it builds
# the shared TINY 3D-PC (tiny_3dpc) at once, while the other worker runs long files that do not need it; the
# other files that read TINY (test_eval_e2e.py, test_reliability.py) come late enough to find it built.
# Files not listed follow in their collection order. Seconds per file (2026-11-29, summed test durations of
# ``pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=0``; test_threedpc after that day's cuts): a
# wrong order costs time, never a result.
LONGEST_FIRST = [
    "test_threedpc.py",  # ~100 s, TINY build included
    "test_cli_errors.py",  # ~85
    "test_report_html.py",  # ~53
    "test_experiment.py",  # ~49
    "test_eval_diffusion.py",  # ~49
    "test_readme_commands.py",  # ~49
    "test_eval_methods.py",  # ~45
    "test_vpt_audit.py",  # ~38
    "test_stimuli.py",  # ~38
    "test_reliability.py",  # ~37, reads TINY
    "test_placement_design.py",  # ~34
    "test_eval_e2e.py",  # ~34, reads TINY
    "test_mindset_common.py",  # ~33
    "test_results_3dpc.py",  # ~33
    "test_eval_vlm.py",  # ~32
    "test_cli.py",  # ~27
    "test_proxy.py",  # ~25
    "test_figures.py",  # ~22
    "test_catalogue.py",  # ~21
    "test_shard.py",  # ~19
    "test_canonical.py",
    "test_mindset_shapes.py",
    "test_reliability_cli.py",
    "test_mindset_illusions.py",
    "test_objects.py",
    "test_validity_sweep.py",
    "test_shortcut_audit.py",
    "test_real_scenes.py",
    "test_render_equivalence.py",
    "test_mindset_low.py",
]


def pytest_collection_modifyitems(session, config, items):
    """Files in :data:`LONGEST_FIRST` order (a stable sort: tests within a file keep theirs)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_configure(config):
    """Under pytest-xdist (``make test`` runs 3 workers), one BLAS/OpenMP thread per worker: workers with a
    thread per core each would oversubscribe 2 cores. Numba's kernels run on one thread in the worker's own
    process too (``numba.set_num_threads(1)``, the main thread's count; ``NUMBA_NUM_THREADS`` is left alone,
    so tests/test_render_fast.py still compares 1 and NUMBA_NUM_THREADS threads, and the images do not depend
    on the count): numba's OpenMP layer with 2 threads per worker makes each parallel region wait for a
    descheduled partner (the TINY 3D-PC build: 56 s with 1 thread, 68 s with 2, back to back, same load)."""
    import os

    if os.environ.get("PYTEST_XDIST_WORKER"):
        for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ.setdefault(k, "1")
        import numba

        numba.set_num_threads(1)


@pytest.fixture(scope="session")
def warm_server():
    """One fork server per test process (tests/forkserver.py: numpy, pandas, torch, Hydra, timm ... imported once,
    a fresh forked child per call, as ``python -m`` runs it), shared by :func:`eval_cli` and :func:`python_m`."""
    import os

    from forkserver import WARM, ForkServer

    root = Path(__file__).resolve().parents[1]
    pythonpath = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    with ForkServer(WARM + ["timm"], pythonpath=pythonpath) as srv:  # timm: every model-loading command
        yield srv


@pytest.fixture(scope="session")
def python_m(warm_server):
    """``python -m <module> <args>`` through the fork server (:func:`warm_server`): saves the 1.5-3 s of imports a
    new interpreter pays per call. Call it as ``python_m(module, *args, env=..., cwd=..., timeout=...)`` (``env``:
    the whole environment, default this process's; ``cwd``: default the repository); it returns a
    :class:`subprocess.CompletedProcess`. tests/test_cli_errors.py::test_forkserver_matches_a_subprocess
    compares the server with a real subprocess on a case of every CLI."""
    import os
    import subprocess

    root = Path(__file__).resolve().parents[1]

    def run(module, *args, env=None, cwd=None, timeout=600):
        r = warm_server.run([module, *map(str, args)], cwd or root, env if env is not None else dict(os.environ),
                            timeout)
        return subprocess.CompletedProcess([module, *args], r["rc"], r["stdout"], r["stderr"])

    return run


@pytest.fixture(scope="session")
def eval_cli(python_m):
    """``python -m eval <args>`` through the fork server (:func:`python_m`). Call it as
    ``eval_cli(*args, env=..., cwd=..., timeout=...)``; it returns a :class:`subprocess.CompletedProcess`
    (``args`` are the module's arguments after ``-m eval``)."""
    import subprocess

    def run(*args, env=None, cwd=None, timeout=600):
        r = python_m("eval", *args, env=env, cwd=cwd, timeout=timeout)
        return subprocess.CompletedProcess(["eval", *args], r.returncode, r.stdout, r.stderr)

    return run

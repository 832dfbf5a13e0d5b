"""Compile Vantage's numba kernels into their on-disk cache once: ``python -m tasks.warmup``.

Every compiled kernel (the splat renderer's stages in ``render/_cpu.py``, each twice: parallel and serial;
the mesh rasteriser of ``render/drawing.py``; the ray-triangle loop of ``tasks/raycast.py``; the glyph
turn-and-stamp pass of the MindSet texturized generators) is declared ``cache=True``: the first process that
calls one compiles it (about 50 CPU-s for all of them on the development machine) and writes the machine code
beside the source (``__pycache__/*.nbi|nbc``); later processes load it in milliseconds. On a fresh clone,
processes started at the same moment (the test workers, a build's workers) would each compile the same
kernels. ``make setup`` runs this module once, so that no later process pays for it.

It runs each kernel through the product's own entry points on tiny inputs (so with the argument types the
product passes): trajectories of a catalogue scene with props (one frame: the parallel kernels; eight small
frames: the serial ones; depth limits and ray casts against the props' stands), and the two MindSet generators
with compiled kernels at their test configurations. What it renders is discarded; nothing is read from
or written to the working folder. A kernel a later process calls with other argument types compiles then,
as before: the cache is a saving, never a condition.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from infra.cli import run_options
from infra.schema import field


def _trajectory(tmp: Path) -> None:
    """A trajectory with props: one frame (the parallel kernels: a frame spread over the threads), then eight
    small frames (the serial ones, one frame per thread), each with the props' depth limits and ray casts."""
    import contextlib
    import io

    from render.trajectory import main

    for frames in (1, 8):  # its "wrote ..." line would name a temporary folder that is gone afterwards
        with contextlib.redirect_stdout(io.StringIO()):
            main(["scene=hydrant_01", f"frames={frames}", "size=48", "props=sample", "props.outcome=occluded",
                  f"out={tmp / f'trajectory{frames}'}", "progress=false"])


def _serial(tmp: Path) -> None:
    """The serial (nogil) kernels, which render one frame per thread (``splat_frames(mode="frames")``) and every
    frame of a build worker that has one numba thread: one small frame without and one with a depth limit."""
    import numpy as np

    from render._cpu import render_cpu
    from scenes.camera import Camera, look_at
    from scenes.catalogue import build

    world = build("hydrant_01").gaussians.in_world()
    cam = Camera.from_fov(48, 48, 50.0, look_at((2.5, 0.0, 1.2), (0.0, 0.0, 0.4)))
    bg = np.zeros((48, 48, 3))
    for limit in (None, np.full((48, 48), 3.0)):
        render_cpu(world, cam, bg, limit, parallel=False)


def _generators(tmp: Path) -> None:
    """The MindSet generators with compiled kernels, at their test configurations: texturized glyphs (turn and
    stamp) and line drawings (the mesh rasteriser)."""
    from tasks.stimuli import write_dataset
    from tasks.stimuli.registry import GENERATORS

    for name in ("mindset/texturized_blobs", "mindset/segmented_line_drawings"):
        write_dataset(name, tmp / name.replace("/", "_"), dict(GENERATORS[name].test_params), progress=False)


STEPS = (("splat renderer, props, ray casts", _trajectory), ("splat renderer, serial kernels", _serial), ("glyph pass, mesh rasteriser", _generators))


USAGE = """usage: python -m tasks.warmup [progress=true]

Compiles the numba kernels into their on-disk cache (about 50 CPU-s on a fresh clone, milliseconds once done);
make setup runs it once."""


@dataclass(frozen=True)
class WarmupOptions:
    progress: bool = field(True, "print each step's CPU seconds")


def warm(progress: bool = True) -> float:
    """Run every step of :data:`STEPS` in a temporary folder; returns the CPU seconds taken."""
    t0 = time.process_time()
    with tempfile.TemporaryDirectory(prefix="vantage-warmup-") as tmp:
        for name, step in STEPS:
            t = time.process_time()
            step(Path(tmp))
            if progress:
                print(f"warm-up: {name}: {time.process_time() - t:.1f} CPU-s", flush=True)
    return time.process_time() - t0


def _job(o: WarmupOptions) -> str:
    return f"warm-up: numba kernels compiled and cached ({warm(o.progress):.1f} CPU-s)"


def main(argv: list[str] | None = None) -> int:
    """The CLI (``infra.cli.run_options``): ``--help`` prints the options (exit 0); a bad setting is one
    ``error:`` line (exit 2)."""
    return run_options("tasks.warmup", USAGE, WarmupOptions, _job, argv)


if __name__ == "__main__":
    raise SystemExit(main())

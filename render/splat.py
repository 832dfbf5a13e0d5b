"""One render function for Gaussian scenes, three backends with the same rules.

``splat(scene, camera, background=..., depth_limit=None, backend="auto")`` → :class:`RenderOutput`;
``splat_frames(scene, cameras, ...)`` → the frames of a trajectory in order, rendered one frame per thread
when that beats spreading each frame's tiles over the threads (many small frames; chosen automatically).

Backends
* ``cpu``   — numba kernel (``render/_cpu.py``): the default here; fast on a few cores.
* ``torch`` — plain PyTorch reference (``render/_torch_impl.py``): slow, readable, the specification.
* ``gsplat``— the CUDA renderer (``render/_gsplat.py``), chosen by ``auto`` only when CUDA works and a
  guarded trial render succeeds. A ``depth_limit`` is met by several ``far_plane`` renders (exact up to
  a 5 mm quantisation; ``auto`` keeps the exact ``cpu`` kernel for it); median depth is NaN.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Sequence

import numpy as np

from infra.images import to_uint8
from scenes.camera import Camera
from scenes.gaussians import GaussianScene

from .rules import FAR, NEAR

BACKENDS = ("auto", "cpu", "torch", "gsplat")


@dataclasses.dataclass
class RenderOutput:
    """Per-pixel outputs, all float32, shape [H, W] (rgb [H, W, 3]).

    * ``rgb``: composited colour C + T·background, **not** clamped (clamp to [0, 1] when writing images).
    * ``alpha``: accumulated opacity 1 − T.
    * ``depth``: expected camera-space depth Σ wᵢ zᵢ / Σ wᵢ (0 where alpha = 0), as gsplat's "ED".
    * ``median_depth``: z of the Gaussian at which accumulated alpha first reaches 0.5 (inf if never).
    * ``backend``: the backend that produced it.
    """

    rgb: np.ndarray
    alpha: np.ndarray
    depth: np.ndarray
    median_depth: np.ndarray
    backend: str

    def image_uint8(self) -> np.ndarray:
        return to_uint8(self.rgb)



def _background_map(background, camera: Camera) -> np.ndarray:
    h, w = camera.height, camera.width
    bg = np.asarray(background, dtype=np.float32)
    if bg.shape == (3,):
        return np.broadcast_to(bg, (h, w, 3)).copy()
    if bg.shape == (h, w, 3):
        return np.ascontiguousarray(bg)
    raise ValueError(f"background must be an RGB triple or an [{h}, {w}, 3] image, got shape {list(bg.shape)}")


@functools.lru_cache(maxsize=1)
def gsplat_available() -> bool:
    """True when torch sees CUDA *and* a trial gsplat render of a few Gaussians succeeds."""
    try:
        import torch

        if not torch.cuda.is_available():
            return False
        from ._gsplat import trial_render

        trial_render()
        return True
    except Exception:  # noqa: BLE001 - any failure (import, JIT build, driver) means "not usable"
        return False


def resolve_backend(backend: str, depth_limit=None) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not one of {BACKENDS}")
    if backend == "auto":
        return "gsplat" if depth_limit is None and gsplat_available() else "cpu"
    if backend == "gsplat" and not gsplat_available():
        raise RuntimeError("backend='gsplat' needs a working CUDA device and gsplat; use backend='cpu' on this machine")
    return backend


def splat(scene: GaussianScene, camera: Camera, background=(0.0, 0.0, 0.0), depth_limit: np.ndarray | None = None,
          backend: str = "auto", near: float = NEAR, far: float = FAR) -> RenderOutput:
    """Render a Gaussian scene with the gsplat 1.5.3 "classic" rules.

    Args:
        scene: Gaussians; its ``world_transform`` (if any) is applied first.
        camera: OpenCV pinhole camera (world-to-camera pose, pixel centres at +0.5).
        background: RGB triple in [0, 1] or an [H, W, 3] colour map that the splats are composited over
            (e.g. an opaque mesh rendering).
        depth_limit: optional [H, W] camera-space z map; Gaussian i contributes to pixel p only if
            z_i ≤ depth_limit[p] (the Unity Gaussian Splatting rule for opaque meshes). Use inf for "none".
        backend: "auto" | "cpu" | "torch" | "gsplat".
        near, far: z clipping planes (gsplat defaults).
    """
    name = resolve_backend(backend, depth_limit)
    scene = scene.in_world()
    bg = _background_map(background, camera)
    if depth_limit is not None:
        depth_limit = np.asarray(depth_limit, np.float32)
        if depth_limit.shape != (camera.height, camera.width):
            raise ValueError(f"depth_limit must have shape [{camera.height}, {camera.width}], got {list(depth_limit.shape)}")
    if name == "cpu":
        from ._cpu import render_cpu

        out = render_cpu(scene, camera, bg, depth_limit, near, far)
    elif name == "torch":
        from ._torch_impl import render_reference

        out = render_reference(scene, camera, bg, depth_limit, near, far)
    elif depth_limit is not None:
        from ._gsplat import render_gsplat_depth_limited

        out = render_gsplat_depth_limited(scene, camera, bg, depth_limit, near=near, far=far)
    else:
        from ._gsplat import render_gsplat

        out = render_gsplat(scene, camera, bg, near, far)
    rgb, alpha, depth, median = (np.asarray(o, np.float32) for o in out)
    return RenderOutput(rgb, alpha, depth, median, name)


# Frame-level parallelism: each thread renders whole frames with the serial (nogil) kernels. It wins when
# there are several frames per thread and frames are small: a frame's serial parts (depth sort, prefix
# sums) and the ~15 thread start/stop points per frame of tile parallelism then cost more than they
# save. Above this many pixels per frame tiles are spread over the threads instead (each frame then has
# enough tiles, and one frame's buffers per thread would grow with the image).
FRAME_PARALLEL_MAX_PIXELS = 512 * 512
FRAME_MODES = ("auto", "frames", "tiles")


def frame_parallel(n_frames: int, width: int, height: int, threads: int) -> bool:
    """True when ``n_frames`` frames of width × height px render faster one frame per thread
    (at least two frames per thread and at most ``FRAME_PARALLEL_MAX_PIXELS`` px per frame)."""
    return threads > 1 and n_frames >= 2 * threads and width * height <= FRAME_PARALLEL_MAX_PIXELS


def splat_frames(scene: GaussianScene, cameras: Sequence[Camera], background=(0.0, 0.0, 0.0),
                 backend: str = "auto", mode: str = "auto", near: float = NEAR,
                 far: float = FAR) -> Iterator[RenderOutput]:
    """Render ``cameras`` in order (a generator: frame i is yielded as soon as frames 0..i are done).

    ``mode``: "tiles" renders frame after frame, each spread over numba's threads; "frames" renders one
    frame per thread (``cpu`` backend, serial kernels without the GIL; at most 2 frames per thread in
    flight); "auto" picks "frames" when :func:`frame_parallel` says so. Both give bit-identical images
    (tested). Other backends render frame after frame. Arguments otherwise as :func:`splat`.
    """
    if mode not in FRAME_MODES:
        raise ValueError(f"mode={mode!r} is not one of {FRAME_MODES}")
    cameras = list(cameras)
    name = resolve_backend(backend)
    if not cameras:
        return
    import numba

    threads = numba.get_num_threads()
    if mode == "auto":
        shapes = {(c.width, c.height) for c in cameras}
        mode = "frames" if len(shapes) == 1 and frame_parallel(len(cameras), *shapes.pop(), threads) else "tiles"
    if name != "cpu" or mode == "tiles" or threads < 2:
        for cam in cameras:
            yield splat(scene, cam, background=background, backend=name, near=near, far=far)
        return
    import collections
    import concurrent.futures as cf

    from ._cpu import render_cpu

    world = scene.in_world()

    def one(cam: Camera) -> RenderOutput:
        out = render_cpu(world, cam, _background_map(background, cam), None, near, far, parallel=False)
        return RenderOutput(*(np.asarray(o, np.float32) for o in out), "cpu")

    with cf.ThreadPoolExecutor(threads, thread_name_prefix="splat-frame") as ex:
        pending: collections.deque = collections.deque()
        it = iter(cameras)
        for cam in it:
            pending.append(ex.submit(one, cam))
            if len(pending) >= 2 * threads:
                break
        while pending:
            yield pending.popleft().result()
            nxt = next(it, None)
            if nxt is not None:
                pending.append(ex.submit(one, nxt))

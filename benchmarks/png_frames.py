"""PNG writers on real 3D-PC frames (issue 19): CPU per frame and file size, pixels checked identical.

    python benchmarks/png_frames.py <3D-PC build folder> [--max 300] [--repeats 3]

Reads up to ``--max`` kept frames (``images/**/*.png``) of a build and encodes each with: PIL at zlib levels
6 (its default, the builder's writer before issue 19), 3, 2, 1 (adaptive row filters); Vantage's
``infra.images.png_bytes`` with row filter none and sub (zlib-ng deflate, level 2); ISA-L level 1 through the same encoder (the
writer until 2026-11, dropped because its bytes were not deterministic) when ``isal`` is installed; and, when OpenCV is
installed (``pip install .[bench]``; not a Vantage dependency), OpenCV at levels 1 and 3. CPU =
``time.process_time`` of encoding only (no file writes), best of ``--repeats``; every encoding is decoded
by PIL and compared with the frame's pixels.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--max", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    import numpy as np
    from PIL import Image

    from infra.images import png_bytes

    files = sorted((Path(args.build) / "images").rglob("*.png"))[: args.max]
    if not files:
        sys.exit(f"error: {args.build}: no images/**/*.png (a 3D-PC build folder?)")
    frames = [np.asarray(Image.open(f).convert("RGB")) for f in files]

    def pil(level):
        def enc(a):
            buf = io.BytesIO()
            Image.fromarray(a).save(buf, format="PNG", compress_level=level)
            return buf.getvalue()
        return enc

    writers = {f"PIL level {k}" + (" (before issue 19)" if k == 6 else ""): pil(k) for k in (6, 3, 2, 1)}
    writers["png_bytes none (zlib-ng 2)"] = lambda a: png_bytes(a, 1)
    writers["png_bytes sub (zlib-ng 2, the builder's)"] = lambda a: png_bytes(a, 1, row_filter="sub")
    try:
        from isal import isal_zlib

        import infra.files as rf

        def isal_png(a):
            keep = rf._compress
            rf._compress = lambda data, level: isal_zlib.compress(data, 1)
            try:
                return png_bytes(a, 1, row_filter="sub")
            finally:
                rf._compress = keep
        writers["png_bytes sub (ISA-L 1, until 2026-11; bench extra)"] = isal_png
    except ImportError:
        pass
    try:
        import cv2

        for k in (1, 3):
            writers[f"OpenCV level {k} (bench extra)"] = \
                lambda a, k=k: cv2.imencode(".png", np.ascontiguousarray(a[..., ::-1]), [cv2.IMWRITE_PNG_COMPRESSION, k])[1].tobytes()
    except ImportError:
        pass
    print(f"{len(frames)} frames {frames[0].shape} from {args.build}; CPU per frame (best of {args.repeats}), mean size")
    for name, enc in writers.items():
        for a in frames[:3]:
            enc(a)  # warm-up
        best = float("inf")
        for _ in range(args.repeats):
            t = time.process_time()
            out = [enc(a) for a in frames]
            best = min(best, time.process_time() - t)
        for a, b in zip(frames, out, strict=True):
            if not np.array_equal(np.asarray(Image.open(io.BytesIO(b)).convert("RGB")), a):
                sys.exit(f"error: {name}: decoded pixels differ")
        size = sum(map(len, out)) / len(out) / 1024
        print(f"  {name:42s} {1000 * best / len(frames):7.2f} ms  {size:6.1f} KiB")


if __name__ == "__main__":
    main()

"""Contact sheets of a built 3D-PC: random images per label, captioned, for a person to check that every
image can be answered the way its label says (issue 10's look check).

``python -m tasks.threedpc.sheet <build> --task vpt --split test --n 40 --out docs/img/threedpc_sheet_vpt.png``

The first ``n`` tiles are label 0, the next ``n`` label 1 (VPT: 0 = the observer cannot see the ball;
depth: 0 = the ball is nearer the viewer than the observer), drawn with a seeded sample. Each caption:
tile index, label, VPT reason or depth gap, the observer's / ball's height on screen (pixels at the build's
size) and the scene. Bad input prints ``error: ...`` and exits 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

TASK_COLUMNS = {"vpt": ("in_vpt", "vpt_label"), "depth": ("in_depth", "depth_label")}


def read_rows(build: Path):
    """The build's frame rows: ``metadata.parquet`` when assembled, else (a build still running) the
    finished scenes' label tables, with ``in_vpt``/``in_depth`` = kept basic frames with that label (before
    the per-split balancing, which only ``assemble`` does)."""
    import pandas as pd

    from .build import LABELS_FILE

    if (build / "metadata.parquet").is_file():
        return pd.read_parquet(build / "metadata.parquet")
    tables = sorted((build / "images").glob(f"*/*/*/{LABELS_FILE}"))
    if not tables:
        raise ValueError(f"{build}: neither metadata.parquet nor finished scenes (images/*/*/*/{LABELS_FILE})")
    md = pd.concat([pd.read_parquet(t) for t in tables], ignore_index=True)
    basic = (md.task_set == "basic") & md.keep.fillna(False).astype(bool)
    md["in_vpt"] = basic & md.vpt_label.notna()
    md["in_depth"] = basic & md.depth_label.notna()
    return md


def pick_images(md, task: str, split: str, n: int, seed: int = 0):
    """Up to ``n`` rows per label (0 then 1) of ``task``'s images in ``split``, sampled with ``seed``."""
    import pandas as pd

    col, lab = TASK_COLUMNS[task]
    sel = md[md[col].astype(bool) & (md.split == split)]
    parts = []
    for k, y in enumerate((0, 1)):
        g = sel[sel[lab] == y]
        parts.append(g.sample(min(n, len(g)), random_state=seed + k))
    return pd.concat(parts)


def caption(row, task: str) -> str:
    """Short tile caption: label, VPT reason (vis / occ / out) or depth gap, observer / ball height (px)."""
    if task == "vpt":
        what = f"{int(row.vpt_label)} {str(row.vpt_reason)[:3]}"
    else:
        what = f"{int(row.depth_label)} {row.depth_gap:+.2f}"
    return f"{what} o{int(row.observer_height_px)} b{int(row.ball_height_px)} {str(row.scene)[:10]}"


def contact_sheet(build: Path, task: str, split: str = "test", n: int = 40, seed: int = 0, cols: int = 10,
                  tile: int = 192) -> np.ndarray:
    """The sheet as a uint8 RGB array [rows·(tile+14), cols·tile, 3]: tiles resized to ``tile`` pixels."""
    from PIL import Image, ImageDraw

    from render.files import read_image

    build = Path(build)
    md = read_rows(build)
    pick = pick_images(md, task, split, n, seed)
    if not len(pick):
        raise ValueError(f"{build}: no {task} images in split {split!r}")
    rows = -(-len(pick) // cols)
    sheet = Image.new("RGB", (cols * tile, rows * (tile + 14)), "white")
    draw = ImageDraw.Draw(sheet)
    for i, r in enumerate(pick.itertuples()):
        im = read_image(build / r.file_name).resize((tile, tile), Image.LANCZOS)
        x, y = (i % cols) * tile, (i // cols) * (tile + 14)
        sheet.paste(im, (x, y))
        draw.text((x + 2, y + tile + 1), f"{i}: {caption(r, task)}", fill="black")
    return np.asarray(sheet)


def main(argv: list[str] | None = None) -> None:
    from render.files import save_png

    ap = argparse.ArgumentParser(prog="python -m tasks.threedpc.sheet", description=__doc__.split("\n\n")[0])
    ap.add_argument("build", type=Path, help="a 3D-PC build folder (with metadata.parquet)")
    ap.add_argument("--task", choices=sorted(TASK_COLUMNS), default="vpt")
    ap.add_argument("--split", default="test")
    ap.add_argument("--n", type=int, default=40, help="images per label")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cols", type=int, default=10)
    ap.add_argument("--tile", type=int, default=192, help="tile size (pixels)")
    ap.add_argument("--out", type=Path, required=True, help="PNG to write")
    a = ap.parse_args(argv)
    if not (a.build / "metadata.parquet").is_file() and not (a.build / "images").is_dir():
        print(f"error: {a.build}: no metadata.parquet or images/ (not a 3D-PC build folder)", file=sys.stderr)
        raise SystemExit(2)
    if a.n < 1 or a.cols < 1 or a.tile < 16:
        print(f"error: need --n >= 1, --cols >= 1, --tile >= 16 (got {a.n}, {a.cols}, {a.tile})", file=sys.stderr)
        raise SystemExit(2)
    try:
        img = contact_sheet(a.build, a.task, a.split, a.n, a.seed, a.cols, a.tile)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    save_png(a.out, img)
    print(f"wrote {a.out} ({img.shape[1]}x{img.shape[0]})")


if __name__ == "__main__":
    main()

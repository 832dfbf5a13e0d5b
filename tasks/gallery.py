"""An HTML gallery of any generated dataset: a few samples per condition.

    python -m tasks.gallery <dataset dir> [per_condition]

Writes ``<dataset dir>/gallery.html`` (images referenced by relative path, so the page works wherever the
folder is moved). Works for 2D datasets (``annotations.parquet``) and 3D-PC builds (``metadata.parquet``).
Images are shown at their natural size (a stimulus scaled by the browser is not the stimulus: thin lines
alias, gratings moiré), conditions in numeric order (``c05 < c10 < c15 < c100``, ``0.4 < 0.45 < 1 < inf``).
"""
from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from pathlib import Path

from infra.cli import REQUIRED, run_options
from infra.schema import field

_TOKEN = re.compile(r"(\d+(?:\.\d+)?|inf)")


def condition_key(name: str) -> tuple:
    """Natural sort key: numbers (and ``inf``) compare as numbers, the text between them as text."""
    key = []
    for i, part in enumerate(_TOKEN.split(str(name))):
        if i % 2:
            key.append((0, math.inf if part == "inf" else float(part), ""))
        elif part:
            key.append((1, 0.0, part))
    return tuple(key)


def write_gallery(root: str | Path, per_condition: int = 6) -> Path:
    import pandas as pd

    root = Path(root)
    if (root / "annotations.parquet").exists():
        df = pd.read_parquet(root / "annotations.parquet")
        group = "condition"
    elif (root / "metadata.parquet").exists():
        df = pd.read_parquet(root / "metadata.parquet")
        df = df[df.file_name != ""].copy()
        df["group"] = df.split + " · vpt " + df.vpt_label.astype(str) + " · depth " + df.depth_label.astype(str)
        group = "group"
    else:
        raise FileNotFoundError(f"{root}: no annotations.parquet or metadata.parquet; is this a generated dataset?")
    df = df[df.file_name != ""]
    parts = ["<!doctype html><meta charset='utf-8'><title>" + html.escape(root.name) + "</title>",
             "<style>body{font-family:sans-serif} img{margin:2px;image-rendering:pixelated;vertical-align:top}"
             " h3{margin:12px 0 4px}</style>", f"<h1>{html.escape(root.name)}</h1>"]
    for cond in sorted(df[group].unique(), key=condition_key):
        g = df[df[group] == cond]
        parts.append(f"<h3>{html.escape(str(cond))} <small>({len(g)} images)</small></h3><div>")
        for f in g.file_name.head(per_condition):
            parts.append(f"<img src='{html.escape(f)}' title='{html.escape(f)}'>")
        parts.append("</div>")
    from infra.files import atomic_write_text

    out = root / "gallery.html"
    atomic_write_text(out, "\n".join(parts))
    return out


USAGE = """usage: python -m tasks.gallery <dataset dir> [per_condition]   (or root=<dir> per_condition=<n>)

Writes <dataset dir>/gallery.html: up to per_condition (default 6) images of each condition of a generated
dataset (annotations.parquet) or a 3D-PC build (metadata.parquet), at their natural size."""


@dataclass(frozen=True)
class GalleryOptions:
    root: str = field(REQUIRED, "a generated dataset (annotations.parquet) or 3D-PC build (metadata.parquet)")
    per_condition: int = field(6, "images shown per condition", range=(1, 100000))


def _job(o: GalleryOptions) -> str:
    if not Path(o.root).is_dir():
        raise ValueError(f"root={o.root!r}: no such folder; {USAGE.splitlines()[0]}")
    return str(write_gallery(o.root, o.per_condition))


def main(argv: list[str] | None = None) -> int:
    """The CLI (``infra.cli.run_options``): ``--help`` prints the usage and options (exit 0); a missing or extra
    argument, a bad count or a folder that holds no dataset is one ``error:`` line (exit 2)."""
    return run_options("tasks.gallery", USAGE, GalleryOptions, _job, argv, positional=("root", "per_condition"))


if __name__ == "__main__":
    raise SystemExit(main())

"""Sheet of MindSet ``global_change`` sets (docs/img/objects_global_baker2022.png): one row per category, each
set as whole | fragmented | frankenstein, generated through the dataset writer like any user's run.

    python -m benchmarks.objects_global_sheet --out docs/img/objects_global_baker2022.png [--preset baker2022] [--sets 2]

Baker & Elder's own images (MindSet's ``assets/baker_2022``) are not shown: they are third-party stimuli
obtained on request, never copied here; put them beside this sheet yourself to compare.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

GAP = 128  # grey frames and gaps: neither ink nor background in either polarity


def sheet(folder: Path, sets: int, tile: int = 112) -> np.ndarray:
    """uint8 [rows, cols] grey sheet of the first ``sets`` sets per category of a generated dataset."""
    import pandas as pd
    from PIL import Image

    df = pd.read_parquet(folder / "annotations.parquet")
    rows = []
    for c in sorted(df.class_name.unique()):
        tiles = []
        for s in sorted(df[df.class_name == c].set_id.unique())[:sets]:
            for cond in ("whole", "fragmented", "frankenstein"):
                f = df[(df.set_id == s) & (df.condition == cond)].file_name.iloc[0]
                im = Image.open(folder / f).convert("L").resize((tile - 2, tile - 2), Image.BOX)
                tiles.append(np.pad(np.asarray(im), ((1, 1), (1, 1)), constant_values=GAP))
            tiles.append(np.full((tile, 10), GAP, np.uint8))
        rows.append(np.concatenate(tiles[:-1], 1))
    return np.concatenate(rows, 0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output PNG")
    ap.add_argument("--preset", default="baker2022", help="global_change preset (default baker2022)")
    ap.add_argument("--sets", type=int, default=2, help="sets per category (default 2)")
    args = ap.parse_args(argv)
    if not 1 <= args.sets <= 10:
        print(f"error: --sets={args.sets} must be in [1, 10]")
        return 2
    import tasks.stimuli  # noqa: F401  (registers the generators)
    from infra.images import save_png
    from tasks.stimuli import write_dataset

    with tempfile.TemporaryDirectory() as tmp:
        out = write_dataset("mindset/global_change", Path(tmp) / "g", {"preset": args.preset, "instances": args.sets},
                            seed=0, progress=False)
        save_png(args.out, sheet(out, args.sets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Two 3D-PC builds of the same config compared (issue 19: what a change to the builder changed).

    python benchmarks/threedpc_compare.py <build A> <build B>

Prints: files only in one build; how many common files are byte-identical (sha256); how many PNGs differ
as files and how many in decoded pixels; the non-PNG files that differ; for metadata.parquet, the columns
that differ on kept rows and, per column, how many dropped rows differ (NaN = NaN), and every change of
``drop_reason``. Exit status 1 when a kept row, a kept image's pixels or the set of files differ.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    import numpy as np
    import pandas as pd
    from PIL import Image

    a, b = Path(sys.argv[1]), Path(sys.argv[2])
    for d in (a, b):
        if not (d / "metadata.parquet").is_file():
            sys.exit(f"error: {d}: no metadata.parquet (not a 3D-PC build)")
    files = [{str(p.relative_to(d)): p for p in d.rglob("*") if p.is_file()} for d in (a, b)]
    fa, fb = files
    only = sorted(set(fa) ^ set(fb))
    common = sorted(set(fa) & set(fb))
    sha = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    differ = [k for k in common if sha(fa[k]) != sha(fb[k])]
    pngs = [k for k in common if k.endswith(".png")]
    pixels = [k for k in pngs if k in differ and not np.array_equal(np.asarray(Image.open(fa[k])), np.asarray(Image.open(fb[k])))]
    print(f"files only in one build: {len(only)} {only[:10]}")
    print(f"common files {len(common)}: {len(common) - len(differ)} identical; PNGs {len(pngs)}: "
          f"{sum(k in differ for k in pngs)} differ as files, {len(pixels)} in pixels {pixels[:5]}")
    print("non-PNG files that differ:", [k for k in differ if not k.endswith(".png")])
    ma, mb = pd.read_parquet(a / "metadata.parquet"), pd.read_parquet(b / "metadata.parquet")
    if list(ma.columns) != list(mb.columns) or len(ma) != len(mb):
        print(f"metadata: different shape or columns ({ma.shape} vs {mb.shape})")
        sys.exit(1)
    kept = ma.keep.astype(bool).to_numpy()
    if not (kept == mb.keep.astype(bool).to_numpy()).all():
        print("metadata: keep differs")
        sys.exit(1)

    def unequal(x, y):
        return ~((x == y) | (x.isna() & y.isna())).fillna(False).to_numpy(bool)

    bad = [c for c in ma.columns if unequal(ma[c][kept], mb[c][kept]).any()]
    print(f"kept rows {kept.sum()}: columns that differ {bad}")
    drop = {c: int(unequal(ma[c][~kept], mb[c][~kept]).sum()) for c in ma.columns}
    print(f"dropped rows {(~kept).sum()}: rows that differ per column", {c: n for c, n in drop.items() if n})
    ch = unequal(ma.drop_reason[~kept], mb.drop_reason[~kept])
    if ch.any():
        print(pd.crosstab(ma.drop_reason[~kept][ch], mb.drop_reason[~kept][ch]).to_string())
    sys.exit(1 if only or pixels or bad else 0)


if __name__ == "__main__":
    main()

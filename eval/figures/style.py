"""Look of every figure: a colour-blind-safe palette, sizes for a two-column paper, and saving.

Figures are :class:`matplotlib.figure.Figure` objects made without pyplot (no global figure registry, so
nothing leaks between calls and no GUI backend is touched). Sizes are in inches: a column of a two-column
paper is 3.5 in wide, the full text width 7.2 in; text is 7 pt (labels) and 6 pt (ticks, legends), which
stays legible at those widths. The palette is Okabe & Ito (2008), distinguishable under the common colour
vision deficiencies; humans are drawn in its vermillion (red), as in model-vs-human's figures, and never
share that colour with a model.
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

COLUMN_IN = 3.5
FULL_IN = 7.2
HUMAN = "#D55E00"  # vermillion: the human colour in every figure
MODEL_GREY = "#7F7F7F"  # many-model clouds
# Okabe & Ito (2008) without the vermillion (reserved for humans) and black first for a single model
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
LINESTYLES = ("-", "--", ":", "-.")

RC = {
    "font.size": 7, "axes.titlesize": 7, "axes.labelsize": 7, "xtick.labelsize": 6, "ytick.labelsize": 6,
    "legend.fontsize": 6, "legend.frameon": False, "axes.spines.top": False, "axes.spines.right": False,
    "axes.linewidth": 0.6, "xtick.major.width": 0.6, "ytick.major.width": 0.6, "lines.linewidth": 1.0,
    "lines.markersize": 3.5, "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
}
DPI = 200  # PNG resolution (the PDF is vector)


def colour(i: int) -> str:
    """The ``i``-th model colour (cycles after the palette's 7)."""
    return PALETTE[i % len(PALETTE)]


@contextlib.contextmanager
def style():
    """The figure style, applied only while a figure is built (matplotlib's rc context is restored after,
    so callers' own settings are untouched)."""
    import matplotlib as mpl

    with mpl.rc_context(RC):
        yield


def new_figure(width: float, height: float, nrows: int = 1, ncols: int = 1, **subplot_kw):
    """``(Figure, axes array [nrows, ncols])``, sizes in inches; call inside :func:`style`."""
    import numpy as np
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **subplot_kw)
    return fig, np.asarray(axes)


def panel_grid(n: int, max_cols: int = 4) -> tuple[int, int]:
    """Rows and columns for ``n`` small panels."""
    cols = min(n, max_cols)
    return (n + cols - 1) // cols, cols


def render(fig, fmt: str, dpi: int = DPI) -> bytes:
    """The figure encoded as ``fmt`` (``png``, ``pdf``, ``svg``). The first call runs the constrained layout;
    it is then frozen, so the other formats reuse the same positions instead of laying out again (the
    layout is most of the drawing time)."""
    with style():
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=dpi)
        if fig.get_layout_engine() is not None:
            fig.set_layout_engine("none")
    return buf.getvalue()


def save(fig, folder: str | Path, stem: str) -> dict:
    """Write ``<folder>/<stem>.png`` (``DPI``) and ``<folder>/<stem>.pdf`` (vector, TrueType fonts embedded:
    journals refuse Type 3), each atomically; returns ``{"png": path, "pdf": path, "png_bytes": bytes}``."""
    import logging

    from scenes.files import atomic_write_bytes

    logging.getLogger("fontTools").setLevel(logging.WARNING)  # its subsetter logs every glyph at INFO (Hydra shows INFO)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    png = render(fig, "png")
    atomic_write_bytes(folder / f"{stem}.png", png)
    atomic_write_bytes(folder / f"{stem}.pdf", render(fig, "pdf"))
    return {"png": folder / f"{stem}.png", "pdf": folder / f"{stem}.pdf", "png_bytes": png}

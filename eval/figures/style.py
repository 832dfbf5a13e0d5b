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
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections import deque
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
    import matplotlib as mpl

    with style():
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=dpi)
        if fig.get_layout_engine() is not None:
            # no engine at all: "none" leaves a placeholder engine, for which savefig still draws the whole
            # figure once more before drawing it (the layout pass), which costs as much as the drawing
            with mpl.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
                fig.set_layout_engine(None)
    return buf.getvalue()


def save(fig, folder: str | Path, stem: str) -> dict:
    """Write ``<folder>/<stem>.png`` (``DPI``) and ``<folder>/<stem>.pdf`` (vector, TrueType fonts embedded:
    journals refuse Type 3), each atomically; returns ``{"png": path, "pdf": path, "png_bytes": bytes}``."""
    import logging

    from infra.files import atomic_write_bytes

    logging.getLogger("fontTools").setLevel(logging.WARNING)  # its subsetter logs every glyph at INFO (Hydra shows INFO)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    png = render(fig, "png")
    atomic_write_bytes(folder / f"{stem}.png", png)
    atomic_write_bytes(folder / f"{stem}.pdf", render(fig, "pdf"))
    return {"png": folder / f"{stem}.png", "pdf": folder / f"{stem}.pdf", "png_bytes": png}



# ------------------------------------------------------------------------------------ saving in parallel

def _send(stream, obj) -> None:
    blob = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(blob)) + blob)
    stream.flush()


def _receive(stream):
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    return pickle.loads(stream.read(struct.unpack("<Q", head)[0]))


def _serve() -> None:
    """A saving helper's loop (``python -c``, started by :class:`FigureSaver`): requests ``(pickled figure,
    folder, stem)`` on stdin, :func:`save`'s dict (or ``("error", text)``) back on stdout, until EOF."""
    import traceback

    requests, replies = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print must not corrupt the replies
    try:
        _warm_up()
        while True:
            try:
                blob, folder, stem = _receive(requests)
            except EOFError:
                return
            try:
                reply = save(pickle.loads(blob), folder, stem)
            except Exception:  # noqa: BLE001 - the caller saves this figure itself and shows the error
                reply = ("error", traceback.format_exc())
            _send(replies, reply)
    except (KeyboardInterrupt, BrokenPipeError):  # stopped by FigureSaver.close: the files are atomic
        return


def _warm_up() -> None:
    """Import what saving needs while the caller is still reading its data."""
    import fontTools.subset  # noqa: F401
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.backends.backend_pdf  # noqa: F401
    import matplotlib.figure  # noqa: F401


_BOOT = ("import pickle, struct, sys; n = struct.unpack('<Q', sys.stdin.buffer.read(8))[0]; "
         "sys.path[:] = pickle.loads(sys.stdin.buffer.read(n)); from eval.figures.style import _serve; _serve()")


class FigureSaver:
    """Save figures (:func:`save`: PNG + PDF) in this process and ``workers`` helper processes at once.

    Saving is most of a report's drawing time and each figure is independent: helpers take figures from the
    front of the list while this process takes them from the back, until none is left. A helper is a plain
    ``python -c`` interpreter on the caller's ``sys.path`` (not multiprocessing, which would re-run the
    caller's main script), started when the saver is made so that it imports matplotlib while the caller
    reads its data; figures travel pickled over its stdin and come back as the same files and PNG bytes as
    :func:`save` writes here (tested). ``workers=0`` saves every figure here, in order (the reference). A
    figure that cannot be pickled, fails in a helper, or meets a helper that died is saved here."""

    def __init__(self, workers: int | None = None, patience: float = 3.0):
        self.patience = patience
        if workers is None:
            workers = 1 if (os.cpu_count() or 1) >= 2 else 0
        self._procs = []
        self._late = False
        for _ in range(max(0, int(workers))):
            try:
                p = subprocess.Popen([sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                _send(p.stdin, list(sys.path))
            except OSError:
                break
            self._procs.append(p)

    def save_all(self, figures: list[tuple[object, str]], folder: str | Path) -> list[dict]:
        """``[(Figure, stem), ...]`` saved into ``folder``; returns :func:`save`'s dicts in the same order.

        When this process has no figure left it waits for the helpers' figures at most twice as long as its
        own slowest figure took (at least ``patience`` seconds), then saves the late ones here: a helper starved of
        CPU on a shared machine must not hold the report up (its late copy is the same file)."""
        import time

        folder = Path(folder)
        done: dict[int, dict] = {}
        blobs = {}
        if self._procs and len(figures) > 1:
            for i, (fig, _) in enumerate(figures):
                with contextlib.suppress(Exception):  # e.g. a lambda tick formatter: saved here
                    blobs[i] = pickle.dumps(fig, protocol=pickle.HIGHEST_PROTOCOL)
        front = deque(i for i in range(len(figures)) if i in blobs)  # for the helpers
        back = deque(i for i in range(len(figures)) if i not in blobs)  # only here
        lock = threading.Lock()
        started = [threading.Event() for _ in self._procs]
        finished = threading.Event()  # set when this call returns: a late helper's reply is dropped

        def feed(proc, started):
            try:
                while True:
                    with lock:
                        i = front.popleft() if front else None
                    started.set()
                    if i is None:
                        return
                    _send(proc.stdin, (blobs[i], str(folder), figures[i][1]))
                    reply = _receive(proc.stdout)
                    with lock:
                        if isinstance(reply, dict) and not finished.is_set():
                            done.setdefault(i, reply)
            except (OSError, ValueError, EOFError, pickle.UnpicklingError):  # the helper died or was stopped
                started.set()

        threads = [threading.Thread(target=feed, args=(p, e), daemon=True) for p, e in zip(self._procs, started)]
        for t in threads:
            t.start()
        for e in started:
            e.wait()
        slowest = 0.0
        while True:
            with lock:
                i = back.pop() if back else front.pop() if front else None
            if i is None:
                break
            t0 = time.perf_counter()
            reply = save(figures[i][0], folder, figures[i][1])
            slowest = max(slowest, time.perf_counter() - t0)
            with lock:
                done[i] = reply
        deadline = time.perf_counter() + max(self.patience, 2 * slowest)
        for t in threads:
            t.join(max(0.0, deadline - time.perf_counter()))
        with lock:
            finished.set()
            late = [i for i in range(len(figures)) if i not in done]
            self._late = self._late or any(t.is_alive() for t in threads)
        for i in late:  # a helper that failed on its figure, died, or is late
            done[i] = save(figures[i][0], folder, figures[i][1])
        return [done[i] for i in range(len(figures))]

    def close(self) -> None:
        """Stop the helpers: each ends after its current figure; a late one is interrupted first (its
        temporary file is removed; a thread still sending it a figure then fails instead of blocking)."""
        import signal

        for p in self._procs:
            if self._late and p.poll() is None:
                p.send_signal(signal.SIGINT)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            for f in (p.stdin, p.stdout):
                with contextlib.suppress(OSError, ValueError):
                    f.close()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self._procs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

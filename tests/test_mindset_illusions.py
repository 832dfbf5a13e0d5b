"""MindSet visual illusions: each generator's claimed property measured back from its own PNGs."""
import functools

import numpy as np
import pandas as pd
import pytest

from tasks.stimuli import ConfigError, write_dataset
from tasks.stimuli.mindset.common import read_png, schema_problems

ILLUSIONS = ("muller_lyer", "ponzo", "ebbinghaus", "jastrow", "tilt", "grayscale_shapes", "lightness_contrast",
             "adelson_checker_shadow", "thatcher_faces", "thatcher_words")


@pytest.fixture(scope="module")
def lite(tmp_path_factory):
    """Each illusion's ``lite`` preset, generated once for the module: name -> (folder, table)."""
    root = tmp_path_factory.mktemp("illusions")
    made = {}

    def get(name, preset="lite", **params):
        key = (name, preset, tuple(sorted(params.items())))
        if key not in made:
            out = write_dataset(f"mindset/{name}", root / f"{name}_{len(made)}", {"preset": preset, **params},
                                seed=3, progress=False)
            made[key] = (out, pd.read_parquet(out / "annotations.parquet"))
        return made[key]

    return get


def _img(out, row) -> np.ndarray:
    return read_png(out / row.file_name).astype(float)


# The measurements below check the exact geometry of Vantage's own variants (preset ``clean``: 2-px strokes, the
# context kept clear of the targets, so each quantity is measurable alone); the ``paper`` presets (the original's
# stimuli) are compared with the original further down.
CLEAN_SMALL = {"preset": "clean", "n_scrambled": 4, "n_illusory": 4}


# ---------------------------------------------------------------------------------------------- Müller-Lyer
def _fin_centroids(cov: np.ndarray, r, w: float = 2.0):
    """The coverage centroid (x, |y − line_y|) of each fin, over the whole pixel rows between the line's band
    and the fin's far end: a parallelogram cut from the fin's stroke, so its centroid lies on the fin's
    centreline. Returns {(side, sign): (x, d)}."""
    fy = r.fin_length * np.sin(np.radians(r.fin_angle))
    cx = (r.line_x0 + r.line_x1) / 2
    xs = np.arange(cov.shape[1]) + 0.5
    out = {}
    for sign in (-1, 1):
        lo, hi = r.line_y + sign * (w / 2 + 0.5), r.line_y + sign * (fy - w / 2 - 0.5)
        i0, i1 = (int(np.ceil(lo)), int(np.floor(hi))) if sign > 0 else (int(np.ceil(hi)), int(np.floor(lo)))
        assert i1 > i0, f"{r.item_id}: no whole row along the fins"
        band = cov[i0:i1]
        ys = np.arange(i0, i1)[:, None] + 0.5
        for side, sel in (("left", xs < cx), ("right", xs >= cx)):
            m = band * sel
            out[side, sign] = ((m * xs).sum() / m.sum(), abs((m * ys).sum() / m.sum() - r.line_y))
    return out


def test_muller_lyer_line_length_measured_from_pngs(lite):
    out, df = lite("muller_lyer", **CLEAN_SMALL)
    assert set(df.condition) == {"scrambled", "inward", "outward"} and (df.condition.value_counts() == 4).all()
    w = 2.0
    for r in df.itertuples():
        cov = _img(out, r).mean(axis=2) / 255.0
        if r.condition == "scrambled":
            # the line alone in its band (the detached fins keep >= 12 px away): area / width = length
            i0, i1 = int(np.floor(r.line_y - w / 2 - 1)), int(np.ceil(r.line_y + w / 2 + 1))
            j0, j1 = int(r.line_x0) - 3, int(np.ceil(r.line_x1)) + 3
            assert cov[i0:i1, j0:j1].sum() / w == pytest.approx(r.line_length, abs=0.3)
            continue
        # each fin's centreline runs from its vertex at slope 1/tan(angle) px per px of height: the measured
        # centroids give the vertices, i.e. the ends of the line
        cot = 1 / np.tan(np.radians(r.fin_angle))
        cen = _fin_centroids(cov, r)
        inward = r.condition == "inward"
        vx = {}
        for (side, sign), (x, d) in cen.items():
            toward_centre = 1 if side == "left" else -1
            step = toward_centre if inward else -toward_centre  # inward fins run back over the line
            vx.setdefault(side, []).append(x - step * d * cot)
            # the direction is the condition: the fin lies on the line's side of its vertex iff inward
            end = r.line_x0 if side == "left" else r.line_x1
            assert ((x - end) * toward_centre > 0) == inward, (r.item_id, side)
        xl, xr = np.mean(vx["left"]), np.mean(vx["right"])
        assert xr - xl == pytest.approx(r.line_length, abs=0.5), r.item_id
        assert np.ptp(vx["left"]) < 0.5 and np.ptp(vx["right"]) < 0.5  # upper and lower fins meet
        # and the line itself joins the vertices: its centre row is lit all the way between them
        row = cov[int(np.floor(r.line_y))]
        assert row[int(np.ceil(xl)) + 1:int(np.floor(xr)) - 1].min() > 0.45


# ---------------------------------------------------------------------------------------------- Ponzo
def _colour_length(img, y, colour: str, w=2.0) -> float:
    """Length of the red or blue horizontal stroke centred on row boundary ``y``: its alpha over any grey,
    (R − G) or (B − G) / 255, summed over its rows, divided by the stroke width."""
    band = img[int(y - w / 2 - 1):int(y + w / 2 + 1)]
    a = (band[..., 0] - band[..., 1]) if colour == "red" else (band[..., 2] - band[..., 1])
    return float(np.clip(a, 0, None).sum() / 255.0 / w)


def test_ponzo_target_lengths_measured_from_pngs(lite):
    out, df = lite("ponzo", **CLEAN_SMALL)
    assert set(df.condition) == {"scrambled", "same_length", "different_length"}
    for r in df.itertuples():
        img = _img(out, r)
        top, bottom = (r.top_color, "blue" if r.top_color == "red" else "red")
        got = {top: _colour_length(img, r.top_y, top), bottom: _colour_length(img, r.bottom_y, bottom)}
        assert got["red"] == pytest.approx(r.red_length, abs=0.3), r.item_id
        assert got["blue"] == pytest.approx(r.blue_length, abs=0.3), r.item_id
        if r.condition == "same_length":
            assert abs(got["red"] - got["blue"]) < 0.3
        else:
            assert abs(got["red"] - got["blue"]) >= 0.02 * 224 - 0.3
    # the railway: in the illusory conditions the white rails converge upward (track narrower at the top line)
    for r in df[df.condition != "scrambled"].itertuples():
        white = _img(out, r).min(axis=2) > 128
        width_at = [np.ptp(np.flatnonzero(white[int(y) + 4])) for y in (r.top_y, r.bottom_y)]
        assert width_at[0] < width_at[1]


# ---------------------------------------------------------------------------------------------- Ebbinghaus
def test_ebbinghaus_centre_diameter_and_flankers_measured(lite):
    from scipy import ndimage

    out, df = lite("ebbinghaus", **CLEAN_SMALL)
    for r in df.itertuples():
        img = _img(out, r)
        red = np.clip(img[..., 0] - img[..., 1], 0, None) / 255.0
        assert 2 * np.sqrt(red.sum() / np.pi) == pytest.approx(r.center_diameter, abs=0.3), r.item_id
        white = img.min(axis=2) / 255.0
        labels, n = ndimage.label(white > 0.5)
        assert n == r.num_flankers
        areas = ndimage.sum(white, labels, range(1, n + 1))
        if r.condition != "scrambled":
            d = 2 * np.sqrt(areas / np.pi)
            np.testing.assert_allclose(d, r.flanker_diameter, atol=0.3)
            big = r.condition == "big_flankers"
            assert (r.flanker_diameter > r.center_diameter) if big else (r.flanker_diameter < r.center_diameter)


# ---------------------------------------------------------------------------------------------- paper = the original
# Issue 32: the ``paper`` presets of Müller-Lyer, Ponzo and Ebbinghaus are the original's stimuli. Each test
# measures the same properties from Vantage's paper PNGs and from the original's images and compares them:
# with figures recorded from a large run of the original (always), and with a fresh small run of the original
# when it can run here (tests/mindset_original.py; Ponzo's script is not in the shared reference copy, so Ponzo is
# checked against its recorded figures only).
#
# How the recorded figures were measured: the original at MindSetVision/mindset-vision 75a7762 (Ponzo: b852f2e,
# the same generator code), ``run_original(name, out, seed=0, num_samples_scrambled=1000,
# num_samples_illusory=300)`` (the ``*_measure`` functions below on every image, ``_summary`` per condition;
# Ebbinghaus rings located by the original's annotation: ring radius (0.02 + (NormSizeCenterCircle +
# NormSizeOtherFlankers) / 2) × 224, flanker radius NormSizeOtherFlankers × 112). Values are fractions of the
# 224-px canvas unless named otherwise; each entry is (mean, sd, min, max) over n images.
#
# Known differences that the tolerances allow for (each in docs/mindset.md's deviation table): the original's
# Pillow circles are ~1 px narrower than their recorded diameter (Vantage draws the recorded size exactly: its
# white ink is ~4-13 % more, its flankers ~1 px wider); Pillow's thin diagonal lines carry max(|dx|, |dy|) px of
# ink instead of their length (Vantage's fins and scattered segments ~5-10 % more ink); Pillow's width-2 rails at
# slopes 3.2-3.3 rasterise to the same 17.0° (so the original measures <= 17.0° where it draws up to 17.35°).
ORIGINAL = {
    "ebbinghaus": {
        "scrambled": {"center": (0.2411, 0.0869, 0.0977, 0.3924, 1000),
                      "white": (0.1010, 0.0368, 0.0112, 0.2229, 1000),
                      "clipped": (0.830, 0.376, 0, 1, 1000), "touch_centre": (0.493, 0.500, 0, 1, 1000)},
        "big_flankers": {"center": (0.2416, 0.0887, 0.0977, 0.3924, 300),
                         "white": (0.2769, 0.0381, 0.2159, 0.3400, 300),
                         "flankers": (5, 0, 5, 5, 300), "flanker": (0.2652, 0.0183, 0.2344, 0.2958, 300),
                         "clipped": (0.0333, 0.180, 0, 1, 300), "touching": (0.1267, 0.333, 0, 1, 300)},
        "small_flankers": {"center": (0.2421, 0.0876, 0.0977, 0.3924, 300),
                           "white": (0.0582, 0.0359, 0.0083, 0.1301, 300),
                           "flankers": (8, 0, 8, 8, 300), "flanker": (0.0908, 0.0322, 0.0352, 0.1434, 300),
                           "clipped": (0.0, 0.0, 0, 0, 300), "touching": (0.1133, 0.318, 0, 1, 300)},
    },
    "muller_lyer": {  # L, fin, angle: the original's annotation (LineLength, ArrowLength / 224, CapArrowAngle in deg)
        c: {"ink": ink, "width": (0.9961, 0.0, 0.9961, 0.9961, n), "components": comp,
            "y_offset": yo, "L": (0.455, 0.123, 0.2500, 0.6696, n), "fin": (0.100, 0.021, 0.0670, 0.1339, n),
            "angle": (27.4, 10.0, 10.0, 44.0, n)}
        for c, n, ink, comp, yo in (
            ("scrambled", 1000, (0.0037, 0.0007, 0.0022, 0.0053, 1000), (2.824, 0.399, 1, 3, 1000),
             (0.0882, 0.0645, 0.0022, 0.3058, 1000)),
            ("inward", 300, (0.0035, 0.0006, 0.0021, 0.0050, 300), (1, 0, 1, 1, 300),
             (0.0880, 0.0596, 0.0022, 0.2701, 300)),
            ("outward", 300, (0.0036, 0.0006, 0.0021, 0.0052, 300), (1, 0, 1, 1, 300),
             (0.0907, 0.0648, 0.0022, 0.2790, 300)))
    },
    "ponzo": {
        "scrambled": {"white": (0.0291, 0.0057, 0.0116, 0.0475, 1000),
                      "blue_length": (0.2990, 0.1177, 0.1007, 0.5147, 1000),
                      "blue_width": (2.026, 0.017, 1.94, 2.05, 1000), "blue_y": (0.4951, 0.2268, 0.1114, 0.8929, 1000),
                      "red_y": (0.5089, 0.2219, 0.1116, 0.8929, 1000)},
        "same_length": {"white": (0.0352, 0.0066, 0.0224, 0.0489, 300),
                        "red_length": (0.2999, 0.1191, 0.1027, 0.5045, 300),
                        "red_width": (2.0, 0.0, 2.0, 2.0, 300), "red_y": (0.5200, 0.2238, 0.1116, 0.8929, 300),
                        "rail_angle": (13.49, 1.79, 10.89, 17.00, 300),
                        "rail_offset": (0.2149, 0.0615, 0.1093, 0.3282, 300), "converge": (1, 0, 1, 1, 300)},
        "different_length": {"white": (0.0359, 0.0072, 0.0232, 0.0484, 300),
                             "blue_length": (0.2976, 0.1169, 0.1027, 0.5045, 300),
                             "blue_width": (2.0, 0.0, 2.0, 2.0, 300), "blue_y": (0.5077, 0.2257, 0.1116, 0.8884, 300),
                             "rail_angle": (13.75, 1.91, 10.89, 17.01, 300),
                             "rail_offset": (0.2218, 0.0662, 0.1093, 0.3282, 300), "converge": (1, 0, 1, 1, 300)},
    },
}


def _channels(img):
    """White (min of R, G, B), red (R − G) and blue (B − G) ink, each float [H, W] in 0-1."""
    img = np.asarray(img, np.int16)
    white = img.min(axis=2).astype(np.float32) / 255
    red = np.maximum(img[..., 0] - img[..., 1], 0).astype(np.float32) / 255
    blue = np.maximum(img[..., 2] - img[..., 1], 0).astype(np.float32) / 255
    return white, red, blue


@functools.lru_cache(maxsize=4)
def _distance_from_centre(S: int) -> np.ndarray:
    yy, xx = np.indices((S, S)) + 0.5
    return np.hypot(xx - S / 2, yy - S / 2)


def _sample(a, x, y):
    """Bilinear values of ``a`` at continuous points (pixel centres at +0.5), 0 outside."""
    from scipy import ndimage

    return ndimage.map_coordinates(a, [np.asarray(y) - 0.5, np.asarray(x) - 0.5], order=1, mode="constant")


def _runs(on) -> int:
    """Runs of True in a circular profile (0 when all or none)."""
    on = np.asarray(on, bool)
    return 0 if on.all() or not on.any() else int((on & ~np.roll(on, 1)).sum())


def ebbinghaus_measure(img, ring_r=None, flanker_r=None) -> dict:
    """Centre diameter (red area → diameter), white and red ink fractions, whether white reaches the border
    (``clipped``) or comes within 2 px of the centre circle (``touch_centre``); for a ring (its radius and flanker
    radius in px from the annotation): the flankers counted as separate runs of white on the circle 0.7 flanker
    radii outside the ring, whether neighbours touch (fewer gaps on the ring than flankers), and the median
    flanker diameter along the rays through them (flankers cut by the border left out)."""
    white, red, _ = _channels(img)
    S = white.shape[0]
    c = S / 2
    d = 2 * np.sqrt(red.sum(dtype=np.float64) / np.pi)
    out = {"center": d / S, "white": white.mean(dtype=np.float64), "red": red.mean(dtype=np.float64),
           "clipped": float(max(white[0].max(), white[-1].max(), white[:, 0].max(), white[:, -1].max()) > 0.5),
           "touch_centre": float((white[_distance_from_centre(S) < d / 2 + 2] > 0.5).any())}
    if ring_r is None:
        return out
    th = np.linspace(0, 2 * np.pi, 4096, endpoint=False)
    rad = ring_r + 0.7 * flanker_r
    outer = _sample(white, c + rad * np.cos(th), c + rad * np.sin(th)) > 0.5
    n = _runs(outer)
    on_ring = _sample(white, c + ring_r * np.cos(th), c + ring_r * np.sin(th)) > 0.5
    out["flankers"] = n
    out["touching"] = float(_runs(~on_ring) < n) if n else 1.0
    t = np.arange(0, S, 0.25)
    k = int(np.argmin(np.abs(t - ring_r)))
    diam = []
    for s0 in np.flatnonzero(outer & ~np.roll(outer, 1)):
        e0 = s0
        while outer[(e0 + 1) % len(th)]:
            e0 += 1
        a = th[((s0 + e0) // 2) % len(th)]
        x, y = c + t * np.cos(a), c + t * np.sin(a)
        inside = (x > 0) & (x < S) & (y > 0) & (y < S)
        v = (_sample(white, x, y) > 0.5) & inside
        if not v[k]:
            continue
        i0, i1 = k, k
        while i0 > 0 and v[i0 - 1]:
            i0 -= 1
        while i1 < len(t) - 1 and v[i1 + 1]:
            i1 += 1
        if i1 + 2 < len(t) and inside[i1 + 2]:  # not cut by the border
            diam.append(t[i1] - t[i0] + 0.25)
    out["flanker"] = float(np.median(diam)) / S if diam else float("nan")
    return out


def muller_lyer_measure(img) -> dict:
    """The line's row (the row with most ink), its extent along the row (±2 rows; ``length``), its stroke width
    (ink across it at its middle), its centre's distance from the canvas centre (``x_offset``, ``y_offset``), the
    ink fraction and the connected pieces of ink (8-connectivity, > 0.25)."""
    from scipy import ndimage

    ink = np.asarray(img, float).mean(axis=2) / 255
    S = ink.shape[0]
    y = int(np.argmax(ink.sum(1)))
    on = np.concatenate([[False], ink[max(y - 2, 0):y + 3].sum(0) > 0.5, [False]])
    st, en = np.flatnonzero(np.diff(on.astype(int)) == 1), np.flatnonzero(np.diff(on.astype(int)) == -1)
    j = int(np.argmax(en - st))
    cx = (st[j] + en[j]) / 2
    return {"ink": ink.mean(), "width": ink[max(y - 4, 0):y + 5, int(cx)].sum(), "length": (en[j] - st[j]) / S,
            "y_offset": abs(y + 0.5 - S / 2) / S, "x_offset": abs(cx - S / 2) / S,
            "components": ndimage.label(ink > 0.25, structure=np.ones((3, 3)))[1]}


def ponzo_measure(img, railway: bool) -> dict:
    """White ink fraction; each coloured line's length (ink / 2 px), width (ink / columns) and centroid row; for
    a railway, the rails fitted through the rows where exactly two short runs of white cross: their mean angle
    from vertical (deg), half their distance at mid-height (``rail_offset``) and whether they converge upward."""
    white, red, blue = _channels(img)
    S = white.shape[0]
    rows = np.arange(S) + 0.5
    out = {"white": white.mean()}
    for name, m in (("red", red), ("blue", blue)):
        out[f"{name}_length"] = m.sum() / 2 / S
        out[f"{name}_width"] = m.sum() / max(int((m.max(0) > 0.5).sum()), 1)
        out[f"{name}_y"] = float((m.sum(1) * rows).sum() / max(m.sum(), 1e-9)) / S
    if railway:
        pts = []
        for r in range(int(0.15 * S), int(0.85 * S)):
            on = np.concatenate([[False], white[r] > 0.5, [False]])
            st, en = np.flatnonzero(np.diff(on.astype(int)) == 1), np.flatnonzero(np.diff(on.astype(int)) == -1)
            if len(st) == 2 and (en - st).max() <= 6:
                pts.append((r + 0.5 - S / 2, (st[0] + en[0]) / 2, (st[1] + en[1]) / 2))
        pts = np.array(pts)
        (bl, al), (br, ar) = np.polyfit(pts[:, 0], pts[:, 1], 1), np.polyfit(pts[:, 0], pts[:, 2], 1)
        out.update(rail_angle=float(np.degrees(np.arctan((abs(bl) + abs(br)) / 2))), rail_offset=(ar - al) / 2 / S,
                   converge=float(bl < 0 < br))
    return out


def _summary(rows: list[dict]) -> dict:
    """key -> (mean, sd, min, max, n) over the rows (NaN left out)."""
    out = {}
    for k in rows[0]:
        v = np.array([r[k] for r in rows], float)
        v = v[~np.isnan(v)]
        out[k] = (v.mean(), v.std(ddof=1) if len(v) > 1 else 0.0, v.min(), v.max(), len(v))
    return out


def _agree(name: str, got: dict, want: dict, mean_tol: dict, range_tol: dict | None = None) -> list[str]:
    """Where Vantage's summary ``got`` disagrees with the original's ``want`` (both condition -> key -> (mean,
    sd, min, max, n)): means further apart than 4 standard errors + ``mean_tol[key]``; with ``range_tol``, a
    min/max outside the original's by more than the tolerance, or a spread under 80 % of the original's."""
    bad = []
    for cond, keys in want.items():
        for key, (mo, so, lo, hi, no) in keys.items():
            mv, sv, lv, hv, nv = got[cond][key]
            se = np.sqrt(so ** 2 / no + sv ** 2 / nv)
            if abs(mv - mo) > 4 * se + mean_tol.get(key, 0.0):
                bad.append(f"{name} {cond} {key}: mean {mv:.4g} vs the original's {mo:.4g} (sd {so:.3g}, n {no})")
            if range_tol is not None and key in range_tol:
                t = range_tol[key]
                if lv < lo - t or hv > hi + t or (hi > lo and hv - lv < 0.8 * (hi - lo)):
                    bad.append(f"{name} {cond} {key}: range [{lv:.4g}, {hv:.4g}] vs the original's "
                               f"[{lo:.4g}, {hi:.4g}]")
    return bad


@pytest.fixture(scope="module")
def paper_sample(tmp_path_factory):
    """Vantage's paper preset with fewer images (60 scrambled, 40 per illusory condition): name -> (folder,
    table)."""
    root = tmp_path_factory.mktemp("paper")
    made = {}

    def get(name):
        if name not in made:
            out = write_dataset(f"mindset/{name}", root / name, {"preset": "paper", "n_scrambled": 60,
                                                                 "n_illusory": 40}, seed=11, progress=False)
            made[name] = (out, pd.read_parquet(out / "annotations.parquet"))
        return made[name]

    return get


def _paper_condition_counts(name):
    from tasks.stimuli import GENERATORS
    from tasks.stimuli.registry import make_config

    gen = GENERATORS[f"mindset/{name}"]
    conditions = [it.condition for it in gen.items(make_config(gen, {"preset": "paper"}), 0)]
    return pd.Series(conditions).value_counts().to_dict()


def _original_sample(name, tmp_path, n_scrambled=40, n_illusory=30):
    """A fresh small run of the original (skips with the reason when it cannot run here): (folder, table)."""
    from mindset_original import original_available, run_original

    ok, why = original_available()
    if not ok:
        pytest.skip(why)
    out = run_original(name, tmp_path / "original", seed=5, num_samples_scrambled=n_scrambled,
                       num_samples_illusory=n_illusory)
    return out, pd.read_csv(out / "annotation.csv")


def _ebbinghaus_summary(out, df, original=False) -> dict:
    """condition -> _summary of ebbinghaus_measure over the images of a Vantage (table) or original (CSV) folder."""
    rows = {}
    S = 224
    for r in df.itertuples():
        img = read_png(out / (r.Path if original else r.file_name))
        cond = ("scrambled" if r.Category == "scrambled_circles" else r.Category) if original else r.condition
        if cond == "scrambled":
            m = ebbinghaus_measure(img)
        elif original:
            m = ebbinghaus_measure(img, S * (0.02 + (r.NormSizeCenterCircle + r.NormSizeOtherFlankers) / 2),
                                   S * r.NormSizeOtherFlankers / 2)
        else:
            m = ebbinghaus_measure(img, r.ring_radius, r.flanker_diameter / 2)
        rows.setdefault(cond, []).append(m)
    return {c: _summary(v) for c, v in rows.items()}


EBB_MEAN_TOL = {"center": 0.01, "white": 0.012, "red": 0.003, "flanker": 0.008}  # the 1-px-narrower Pillow circles
EBB_RANGE_TOL = {"center": 0.012, "flanker": 0.012}


def test_ebbinghaus_paper_matches_the_original(paper_sample, tmp_path):
    assert _paper_condition_counts("ebbinghaus") == {"scrambled": 5000, "small_flankers": 50, "big_flankers": 50}
    out, df = paper_sample("ebbinghaus")
    got = _ebbinghaus_summary(out, df)
    assert _agree("ebbinghaus", got, ORIGINAL["ebbinghaus"], EBB_MEAN_TOL, EBB_RANGE_TOL) == []
    # the recorded centre diameter is what is drawn (red area -> diameter)
    for r in df.itertuples():
        red = np.clip(read_png(out / r.file_name)[..., 0].astype(float) - read_png(out / r.file_name)[..., 1], 0, None)
        assert 2 * np.sqrt(red.sum() / 255 / np.pi) == pytest.approx(r.center_diameter, abs=0.3), r.item_id
    assert (df[df.condition == "big_flankers"].num_flankers == 5).all()
    assert (df[df.condition == "small_flankers"].num_flankers == 8).all()
    assert (df[df.condition == "scrambled"].num_flankers == 5).all()
    # and beside a fresh run of the original
    o_out, o_df = _original_sample("ebbinghaus", tmp_path)
    assert _agree("ebbinghaus", got, _ebbinghaus_summary(o_out, o_df, original=True), EBB_MEAN_TOL) == []


def _muller_lyer_summary(out, df, original=False) -> dict:
    rows = {}
    for r in df.itertuples():
        m = muller_lyer_measure(read_png(out / (r.Path if original else r.file_name)))
        if original:
            m.update(L=r.LineLength / 224, fin=r.ArrowLength / 224, angle=float(r.CapArrowAngle))
        else:
            m.update(L=r.line_length_norm, fin=r.fin_length / 224, angle=r.fin_angle)
        rows.setdefault(r.Type if original else r.condition, []).append(m)
    return {c: _summary(v) for c, v in rows.items()}


ML_MEAN_TOL = {"ink": 0.0004, "width": 0.01}  # Pillow's diagonal lines carry less ink than their length
ML_RANGE_TOL = {"L": 0.005, "fin": 0.005, "angle": 0.5, "y_offset": 0.03}


def test_muller_lyer_paper_matches_the_original(paper_sample, tmp_path):
    assert _paper_condition_counts("muller_lyer") == {"scrambled": 5000, "inward": 500, "outward": 500}
    out, df = paper_sample("muller_lyer")
    got = _muller_lyer_summary(out, df)
    assert _agree("muller_lyer", got, ORIGINAL["muller_lyer"], ML_MEAN_TOL, ML_RANGE_TOL) == []
    for r in df.itertuples():
        if r.condition != "scrambled":  # 1-px strokes: one row of full ink across the line's middle (the fins
            # are > 4 px away from it there), as the original's 1-px Pillow line
            img = read_png(out / r.file_name).astype(float).mean(axis=2)
            row = int(r.line_y)
            col = img[row - 2:row + 3, int(r.line_x0 + r.line_x1) // 2]
            assert col[2] == 255 and col.sum() == 255, r.item_id
        # the original's placement: the centre x and y both in [fin + L/2, S - fin - L/2]
        lo, hi = r.fin_length + r.line_length / 2, 224 - r.fin_length - r.line_length / 2
        assert lo - 1e-9 <= (r.line_x0 + r.line_x1) / 2 <= hi + 1e-9 and lo <= r.line_y <= hi
    # scrambled: the line and two intact arrowheads (three pieces of ink unless they cross), each arrowhead's
    # fins joined at one vertex and opening in opposite directions
    scr = df[df.condition == "scrambled"]
    assert scr.arrow_direction.notna().all()
    assert got["scrambled"]["components"][3] == 3
    o_out, o_df = _original_sample("muller_lyer", tmp_path)
    assert _agree("muller_lyer", got, _muller_lyer_summary(o_out, o_df, original=True), ML_MEAN_TOL) == []


PONZO_MEAN_TOL = {"white": 0.003, "rail_angle": 0.4, "red_width": 0.05, "blue_width": 0.05}
PONZO_RANGE_TOL = {"red_length": 0.006, "blue_length": 0.006, "red_y": 0.006, "blue_y": 0.006,
                   "rail_angle": 0.5, "rail_offset": 0.005}


def test_ponzo_paper_matches_the_original(paper_sample):
    """Against the recorded figures only: the original's Ponzo script is not in the shared reference copy."""
    assert _paper_condition_counts("ponzo") == {"scrambled": 5000, "same_length": 500, "different_length": 500}
    out, df = paper_sample("ponzo")
    measured = [ponzo_measure(read_png(out / r.file_name), r.condition != "scrambled") for r in df.itertuples()]
    got = {c: _summary([m for m, k in zip(measured, df.condition) if k == c]) for c in set(df.condition)}
    assert _agree("ponzo", got, ORIGINAL["ponzo"], PONZO_MEAN_TOL, PONZO_RANGE_TOL) == []
    # every measured length is the recorded one where the line is not under the other one
    for r, m in zip(df.itertuples(), measured):
        if abs(r.top_y - r.bottom_y) > 2:
            assert m["red_length"] * 224 == pytest.approx(r.red_length, abs=0.3), r.item_id
            assert m["blue_length"] * 224 == pytest.approx(r.blue_length, abs=0.3), r.item_id
    ill = df[df.condition != "scrambled"]
    assert (ill.top_y <= 112).all() and (ill.bottom_y >= 112).all()
    assert ((ill.red_length == ill.blue_length) == (ill.condition == "same_length")).all()


# ---------------------------------------------------------------------------------------------- Jastrow
def test_jastrow_shape_sizes_measured(lite):
    out, df = lite("jastrow")
    assert len(set(df.condition)) == 6
    for r in df.itertuples():
        img = _img(out, r)
        red = np.clip(img[..., 0] - img[..., 1], 0, None) / 255.0
        blue = np.clip(img[..., 2] - img[..., 1], 0, None) / 255.0
        assert red.sum() == pytest.approx(r.red_area, rel=0.005)
        assert blue.sum() == pytest.approx(r.blue_area, rel=0.005)
        same = r.condition.startswith("illusory") or r.condition == "random_same_size"
        assert (abs(red.sum() - blue.sum()) < 0.005 * red.sum()) == same
        if r.on_top:  # stacked: the named colour is above (its centroid higher on the canvas)
            rows = np.arange(img.shape[0])[:, None]
            yr, yb = (rows * red).sum() / red.sum(), (rows * blue).sum() / blue.sum()
            assert (yr < yb) == (r.on_top == "red")


# ---------------------------------------------------------------------------------------------- tilt
def _fit_grating(grey: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """(orientation in degrees by the module's convention, cycles per canvas width) of the sinusoid in the
    masked pixels: the 2D FFT's peak, refined by a least-squares fit of a·cos + b·sin + c over the pixels."""
    from scipy.optimize import least_squares

    S = grey.shape[0]
    g = np.where(mask, grey - grey[mask].mean(), 0.0)
    spec = np.abs(np.fft.fft2(g))
    spec[0, 0] = 0
    i, j = np.unravel_index(np.argmax(spec), spec.shape)
    ky0 = 2 * np.pi * (i if i < S / 2 else i - S) / S
    kx0 = 2 * np.pi * (j if j < S / 2 else j - S) / S
    yy, xx = np.nonzero(mask)
    yy, xx = yy[::7], xx[::7]  # every 7th pixel: enough for the fit, 7x faster
    x, y, v = xx + 0.5 - S / 2, yy + 0.5 - S / 2, grey[yy, xx]

    def resid(p):
        ph = p[0] * x + p[1] * y
        A = np.stack([np.cos(ph), np.sin(ph), np.ones_like(ph)], 1)
        coef, *_ = np.linalg.lstsq(A, v, rcond=None)
        return A @ coef - v

    kx, ky = least_squares(resid, [kx0, ky0], x_scale=0.01).x
    theta = np.degrees(np.arctan2(ky, kx))
    theta = (theta + 90) % 180 - 90
    return float(theta), float(np.hypot(kx, ky) * S / (2 * np.pi))


def _angle_diff(a, b):
    return abs((a - b + 90) % 180 - 90)


def test_tilt_centre_and_context_orientation_measured(lite):
    out, df = lite("tilt")
    S = 224
    yy, xx = np.indices((S, S)) + 0.5
    for r in df.itertuples():
        img = _img(out, r)
        grey = img.mean(axis=2)
        d = np.hypot(xx - S / 2, yy - S / 2)
        inner, outer = d < r.radius_px - 2, d > r.radius_px + 2
        bg = np.array([r.background_r, r.background_g, r.background_b], float)
        if r.condition != "only_context":
            th, f = _fit_grating(grey, inner)
            assert _angle_diff(th, r.theta_center) < 0.3 and f == pytest.approx(r.frequency, rel=0.01), r.item_id
        else:
            assert (img[inner] == bg).all()  # the disc left at the background colour
        if r.condition != "only_center":
            th, f = _fit_grating(grey, outer)
            assert _angle_diff(th, r.theta_context) < 0.3 and f == pytest.approx(r.frequency, rel=0.01), r.item_id
        else:
            assert (img[outer] == bg).all()
    cc = df[df.condition == "center_context"]
    assert (cc.theta_center == 0).all() and cc.theta_context.nunique() == len(cc)


# ---------------------------------------------------------------------------------------------- fast raster
def test_fast_coverage_equals_the_supersampled_reference():
    """The edge-only supersampling equals common.coverage bit for bit on the shapes the illusions draw."""
    from tasks.stimuli.mindset.common import coverage, disc, segment
    from tasks.stimuli.mindset.illusions_raster import fast_coverage
    from tasks.stimuli.mindset.illusions_size import annular_sector

    rng = np.random.default_rng(0)
    shapes = []
    for _ in range(150):
        p, q = rng.uniform(-20, 244, 2), rng.uniform(-20, 244, 2)
        shapes.append(segment(p, q, rng.uniform(1.0, 6.0), ("butt", "round", "square")[rng.integers(3)]))
        shapes.append(disc(*rng.uniform(-10, 234, 2), rng.uniform(0.8, 80)))
        R = rng.uniform(10, 100)
        shapes.append(annular_sector(*rng.uniform(0, 224, 2), R, R * rng.uniform(0.05, 0.95), rng.uniform(10, 180),
                                     rng.uniform(0, 360)))
    for s in shapes:
        for size in (224, (150, 260)):
            a, oa = coverage(s, size)
            b, ob = fast_coverage(s, size)
            assert oa == ob and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_distance_banded_coverage_equals_the_reference():
    """Strokes and discs supersampled only within 0.6 px of their outline: the same pixels as common.coverage,
    for every cap, thin and thick, short and long, partly off the canvas."""
    from tasks.stimuli.mindset.common import coverage, disc, segment
    from tasks.stimuli.mindset.illusions_raster import disc_coverage, segment_coverage

    rng = np.random.default_rng(1)
    for _ in range(300):
        p, q = rng.uniform(-20, 244, 2), rng.uniform(-20, 244, 2)
        if rng.uniform() < 0.3:
            q = p + rng.uniform(-3, 3, 2)  # short ones too
        w = rng.uniform(0.3, 8.0)
        for cap in ("butt", "round", "square"):
            a, oa = coverage(segment(p, q, w, cap), 224)
            b, ob = segment_coverage(p, q, w, cap, 224)
            assert oa == ob
            np.testing.assert_array_equal(a, b)
        c, r = rng.uniform(-10, 234, 2), rng.uniform(0.2, 90)
        a, oa = coverage(disc(*c, r), (200, 224))
        b, ob = disc_coverage(*c, r, (200, 224))
        assert oa == ob
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------------------- lightness
def _arrow_ok(img, r):
    """The marker is drawn just above the target pixel: white pixels in the 5 rows above it."""
    above = img[max(r.target_y - 5, 0):r.target_y, r.target_x]
    assert above.max() >= 200, r.item_id


def test_grayscale_shapes_target_pixel_value(lite):
    out, df = lite("grayscale_shapes")
    assert len(df) == 6 and df.target_value.between(0, 255).all()
    for r in df.itertuples():
        img = _img(out, r)
        y, x = r.target_y, r.target_x
        assert (img[y, x] == r.target_value).all(), r.item_id
        # a clean label: the target's 3 x 3 neighbourhood (below the arrow tip) is one grey
        assert (img[y:y + 2, x - 1:x + 2] == r.target_value).all()
        _arrow_ok(img, r)
    assert df.target_value.nunique() > 1


def test_lightness_contrast_target_values_and_matched_sets(lite):
    out, df = lite("lightness_contrast")
    assert sorted(set(df.condition)) == ["background_000", "background_120", "background_240"]
    for r in df.itertuples():
        img = _img(out, r)
        want = r.square_grey if r.target_on_square else r.background_grey
        assert r.target_value == want and (img[r.target_y, r.target_x] == want).all()
        _arrow_ok(img, r)
    assert df.target_on_square.any() and (~df.target_on_square).any()
    # one background, the arrow moved: the images are identical outside the two arrows' boxes
    g = df[df.condition == "background_120"]
    a, b = (_img(out, r) for r in list(g.itertuples())[:2])
    ra, rb = list(g.itertuples())[:2]
    mask = np.ones(a.shape[:2], bool)
    for r in (ra, rb):
        mask[r.target_y - 13:r.target_y + 1, r.target_x - 4:r.target_x + 5] = False
    assert (a[mask] == b[mask]).all() and (a[~mask] != b[~mask]).any()


def test_adelson_targets_equal_and_scene_consistent(lite):
    from tasks.stimuli.mindset.illusions_lightness import AdelsonScene, check_index_map, render_adelson, target_checks

    out, df = lite("adelson_checker_shadow")
    assert {"target_a", "target_b"} <= set(df.condition)
    r0 = df.iloc[0]
    assert r0.patch_a_value == r0.patch_b_value  # recorded equal ...
    for r in df.itertuples():
        img = _img(out, r)
        assert (img[r.target_y, r.target_x] == r.target_value).all()
        if r.condition in ("target_a", "target_b"):
            assert r.target_value == r.patch_a_value  # ... and measured equal at the arrow
        _arrow_ok(img, r)
    # the whole interior of both checks (away from antialiased edges): one value, the same for A and B, while
    # the lit light checks are brighter and the shadowed dark checks darker
    sc = AdelsonScene()
    a, b = target_checks(sc)
    ck = check_index_map(sc, 224)
    base = _img(out, df[df.condition == "background"].iloc[0])[..., 0]
    from scipy import ndimage

    def interior(q):
        return ndimage.binary_erosion(ck == q[0] * sc.n + q[1], iterations=2)

    va, vb = base[interior(a)], base[interior(b)]
    assert len(va) > 30 and len(vb) > 30
    assert va.min() == va.max() == vb.min() == vb.max() == r0.patch_a_value
    img, lab = render_adelson(sc, 224, 0, 3)
    lit_light = base[ndimage.binary_erosion(lab == 1, iterations=2)]
    dark_shadow = base[ndimage.binary_erosion(lab == 4, iterations=2)]
    assert lit_light.min() > va[0] > dark_shadow.max()
    # the targets are what their names say: B a light check in the cylinder's shadow, A a dark check in light
    assert (a[0] + a[1]) % 2 == 1 and (b[0] + b[1]) % 2 == 0


# ---------------------------------------------------------------------------------------------- Thatcher
def _sets(out, df):
    for sid, g in df.groupby("set_id"):
        assert len(g) == 4 and set(g.condition) == {"upright", "inverted", "thatcherized_upright",
                                                    "thatcherized_inverted"}
        yield g, {r.condition: _img(out, r) for r in g.itertuples()}


def test_thatcher_faces_regions_rotated_exactly(lite):
    out, df = lite("thatcher_faces")
    blend = 5
    for g, im in _sets(out, df):
        r = g.iloc[0]
        up, th = im["upright"], im["thatcherized_upright"]
        np.testing.assert_array_equal(im["inverted"], up[::-1, ::-1])  # inversion: the whole canvas, exactly
        np.testing.assert_array_equal(im["thatcherized_inverted"], th[::-1, ::-1])
        outside = np.ones(up.shape[:2], bool)
        for name in ("left_eye", "right_eye", "mouth"):
            x0, y0, x1, y1 = (int(r[f"{name}_{c}"]) for c in ("x0", "y0", "x1", "y1"))
            outside[y0:y1, x0:x1] = False
            # the region's interior is the upright region turned by 180 degrees, pixel for pixel ...
            turned = up[y0:y1, x0:x1][::-1, ::-1]
            inner = (slice(blend, -blend), slice(blend, -blend))
            np.testing.assert_array_equal(th[y0:y1, x0:x1][inner], turned[inner])
            # ... and the feature is not symmetric, so that is a real change
            assert np.abs(th[y0:y1, x0:x1] - up[y0:y1, x0:x1]).mean() > 5
        np.testing.assert_array_equal(th[outside], up[outside])  # identical outside the regions


def test_thatcher_words_letters_rotated_exactly(lite):
    out, df = lite("thatcher_words")
    for g, im in _sets(out, df):
        r = g[g.condition == "thatcherized_upright"].iloc[0]
        up, th = im["upright"], im["thatcherized_upright"]
        np.testing.assert_array_equal(im["inverted"], up[::-1, ::-1])
        np.testing.assert_array_equal(im["thatcherized_inverted"], th[::-1, ::-1])
        assert len(r.rotated_letters) == 2 and not set(r.rotated_letters) & set("HINOSXZ")
        outside = np.ones(up.shape[:2], bool)
        for n in range(2):
            x0, y0, x1, y1 = (int(r[f"rotated{n}_{c}"]) for c in ("x0", "y0", "x1", "y1"))
            outside[y0:y1, x0:x1] = False
            np.testing.assert_array_equal(th[y0:y1, x0:x1], up[y0:y1, x0:x1][::-1, ::-1])
            assert (th[y0:y1, x0:x1] != up[y0:y1, x0:x1]).any()
        np.testing.assert_array_equal(th[outside], up[outside])
        assert up.max() == 255 and up[outside].max() == 255  # the other letters are there
    assert df.font.nunique() >= 2


# ---------------------------------------------------------------------------------------------- contract
@pytest.mark.parametrize("name", ILLUSIONS)
def test_schema(name, lite):
    """Every illusion: the shared schema holds for its lite preset. (The paper presets' counts against the
    original's: tests/test_mindset_paper.py, from docs/mindset.md's table; byte-identity across worker counts and
    the unknown-key error: test_mindset_common.py, for every MindSet dataset.)"""
    out, df = lite(name)
    assert schema_problems(out, f"mindset/{name}") == []


@pytest.mark.parametrize("name, params, message", [
    ("muller_lyer", {"line_length": [0.5, 0.2]}, r"line_length=\[0.5, 0.2\]: must be \[min, max\]"),
    ("muller_lyer", {"fin_angle": [10.0, 95.0]}, r"fin_angle=95.0 is out of range \[5.0, 85.0\]"),
    ("muller_lyer", {"line_length": [0.3, 0.9], "fin_length": [0.1, 0.4]}, "does not fit"),
    ("ponzo", {"num_rail_lines": -1}, r"num_rail_lines=-1 is out of range \[0, 50\]"),
    ("ebbinghaus", {"big_flanker_size": [0.2, 0.45], "flanker_overlap": False}, "leaves the canvas"),
    ("jastrow", {"arc_span": [10.0, 200.0]}, r"arc_span=200.0 is out of range \[10.0, 180.0\]"),
    ("tilt", {"frequency": [5.0, 80.0]}, "aliases"),
    ("lightness_contrast", {"background": "random_uniform"}, "sweeps the background grey"),
    ("adelson_checker_shadow", {"rays_per_pixel_side": 2}, "rays_per_pixel_side=2 is not allowed; allowed"),
    ("adelson_checker_shadow", {"light_elevation": 60.0}, "light_elevation=60.0: .*no light check wholly in shadow"),
    ("thatcher_words", {"fonts": ["Arial"]}, "fonts='Arial' is not allowed"),
    ("thatcher_words", {"num_words": 5000}, "the word list has only"),
    ("thatcher_faces", {"colour": 3}, r"unknown parameter\(s\) \['colour'\]"),
    ("thatcher_words", {"words_file": "/nonexistent/words.txt"}, "words_file='/nonexistent/words.txt': cannot read"),
])
def test_bad_input_fails_before_writing(name, params, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        write_dataset(f"mindset/{name}", tmp_path / "x", params, progress=False)
    assert not (tmp_path / "x").exists()


def test_thatcher_words_from_a_user_word_list(tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text("# my words\nplanet\nrocket\ngarden\n")
    out = write_dataset("mindset/thatcher_words", tmp_path / "w", {"preset": "lite", "words_file": str(f)},
                        progress=False)
    assert set(pd.read_parquet(out / "annotations.parquet").word) == {"PLANET", "ROCKET", "GARDEN"}
    f.write_text("planet\nnaïve\n")
    from tasks.stimuli.mindset.illusions_thatcher import word_list

    word_list.cache_clear()
    with pytest.raises(ConfigError, match="not plain letters A-Z, e.g. 'NAÏVE'"):
        write_dataset("mindset/thatcher_words", tmp_path / "v", {"preset": "lite", "words_file": str(f)},
                      progress=False)


def test_cli_generates_an_illusion_and_reports_bad_input(tmp_path, python_m):
    """The generation in a new interpreter, the refusal forked from a warm server (tests/conftest.py: python_m)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "tasks.generate", "dataset=mindset/ebbinghaus", f"out={tmp_path / 'e'}",
                        "preset=lite", "n_scrambled=1"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert len(pd.read_parquet(tmp_path / "e" / "annotations.parquet")) == 1 + 2 * 4
    r = python_m("tasks.generate", "dataset=mindset/tilt", f"out={tmp_path / 't'}", "radius=[0.5,0.1]", timeout=300)
    assert r.returncode == 2 and "radius=[0.5, 0.1]" in r.stderr and "Traceback" not in r.stderr

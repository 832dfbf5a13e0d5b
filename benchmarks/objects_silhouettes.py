"""Do the library's silhouettes look like real silhouettes of their categories? (docs/objects.md)

Trains simple classifiers on shape descriptors of the 160 real silhouettes in ``../shared/data/silhouettes``
(16 classes × 10; located next to the repository or via ``VANTAGE_SHARED_DATA``; never copied into the
repository) and asks them to name each procedural silhouette's category (canonical view of every instance).
Chance is 1/16 = 6.25 %. Descriptors (each invariant to position and scale, not to the image-plane
rotation):

* ``mask`` — the object's bounding box, padded to a square (aspect ratio kept), resized to 24×24;
* ``hog`` — histograms of oriented gradients (Dalal & Triggs' standard layout: 9 orientations, 8×8-pixel
  cells, 2×2-cell blocks, L2-Hys) of that square resized to 64×64;
* ``hu`` — log-scaled Hu moments (also rotation invariant) plus bounding-box aspect ratio and fill;
* ``fourier`` — magnitudes of the first 16 Fourier descriptors of the outer contour (normalised by the first).

Classifiers: 1-NN, 5-NN, logistic regression (C = 0.1), RBF support-vector machine (C = 1), all on
standardised features, none tuned. The real silhouettes face left or right; each is used with its mirror
image. The pair reported first is the one that names *held-out real* silhouettes best (10-fold), chosen on
the real set alone, before looking at the procedural score.

Only the 16 ImageNet-16 categories are checked (the real silhouettes name no others). Besides the library's
five instances per category (the criterion: each category named at least 3 of 5 times), ``--more 20``
names instances 1-20 with the chosen pair, to show how far the five-instance figure generalises.

Usage: ``python -m benchmarks.objects_silhouettes [--out docs/img/objects_silhouette_check.png] [--more 20]``.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def shared_silhouettes() -> Path:
    """``$VANTAGE_SHARED_DATA/silhouettes``, else ``shared/data/silhouettes`` beside the repository (or beside
    the folder of worktrees that holds it)."""
    if "VANTAGE_SHARED_DATA" in os.environ:
        return Path(os.environ["VANTAGE_SHARED_DATA"]) / "silhouettes"
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "data" / "silhouettes").is_dir():
            return base / "shared" / "data" / "silhouettes"
    return ROOT.parent / "shared" / "data" / "silhouettes"


def load_real(folder: Path) -> tuple[list[np.ndarray], list[str]]:
    """Boolean object masks (dark pixels) and class names of the real silhouettes (one subfolder per class)."""
    from PIL import Image

    masks, labels = [], []
    for cls in sorted(p.name for p in folder.iterdir() if p.is_dir()):
        for f in sorted((folder / cls).glob("*.png")):
            a = np.asarray(Image.open(f).convert("L"), np.float32) / 255
            masks.append(a < 0.5)
            labels.append(cls)
    return masks, labels


def render_library(size: int = 224, instances: int | None = None) -> tuple[list[np.ndarray], list[str], list[str]]:
    """Silhouette masks (canonical views, longest side 0.9 × ``size``) of instances 1..``instances``
    (default the library's 5) of the 16 ImageNet-16 categories (the ones the real silhouettes name)."""
    from render.drawing import View, buffers, silhouette
    from scenes.objects import N_INSTANCES, build, category_names

    masks, labels, names = [], [], []
    for c in category_names("imagenet16"):
        for i in range(1, (instances or N_INSTANCES) + 1):
            m = build(c, i)
            az, inc = m.view
            b = buffers(m.mesh, View(az, inc, longest_side=size * 0.9, canvas=(size, size)), supersample=1)
            masks.append(silhouette(b) > 0.5)
            labels.append(c)
            names.append(m.name)
    return masks, labels, names


def _crop_square(mask: np.ndarray, n: int) -> np.ndarray:
    from PIL import Image

    rows, cols = np.nonzero(mask)
    if len(rows) == 0:
        return np.zeros((n, n), np.float32)
    m = mask[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    h, w = m.shape
    s = max(h, w)
    sq = np.zeros((s, s), np.float32)
    sq[(s - h) // 2:(s - h) // 2 + h, (s - w) // 2:(s - w) // 2 + w] = m
    return np.asarray(Image.fromarray((sq * 255).astype(np.uint8)).resize((n, n), Image.BILINEAR), np.float32) / 255


def features(mask: np.ndarray, kind: str) -> np.ndarray:
    from skimage import measure

    if kind == "mask":
        return _crop_square(mask, 24).ravel()
    if kind == "hog":
        from skimage.feature import hog

        return hog(_crop_square(mask, 64), orientations=9, pixels_per_cell=(8, 8), cells_per_block=(2, 2),
                   block_norm="L2-Hys")
    if kind == "hu":
        hu = measure.moments_hu(measure.moments_normalized(measure.moments_central(mask.astype(float)), 3))
        rows, cols = np.nonzero(mask)
        h, w = np.ptp(rows) + 1, np.ptp(cols) + 1
        return np.concatenate([-np.sign(hu) * np.log10(np.abs(hu) + 1e-30), [np.log(h / w), mask.sum() / (h * w)]])
    if kind == "fourier":
        padded = np.pad(mask, 1)
        contours = measure.find_contours(padded.astype(float), 0.5)
        c = max(contours, key=len)
        z = c[:, 1] + 1j * c[:, 0]
        # resample to 128 points evenly spaced along the contour, then FFT
        d = np.r_[0, np.cumsum(np.abs(np.diff(z)))]
        t = np.linspace(0, d[-1], 128, endpoint=False)
        z = np.interp(t, d, z.real) + 1j * np.interp(t, d, z.imag)
        f = np.abs(np.fft.fft(z - z.mean()))
        f = f / (f[1] + 1e-12)
        return np.concatenate([f[2:17], f[-16:-1]])
    raise ValueError(f"descriptor {kind!r}; one of {', '.join(DESCRIPTORS)}")


DESCRIPTORS = ("mask", "hog", "hu", "fourier")
CLASSIFIERS = ("1nn", "5nn", "logistic", "svm")


def _classifier(name: str):
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    clf = {"1nn": lambda: KNeighborsClassifier(1), "5nn": lambda: KNeighborsClassifier(5),
           "logistic": lambda: LogisticRegression(C=0.1, max_iter=5000), "svm": lambda: SVC(C=1.0)}[name]()
    return make_pipeline(StandardScaler(), clf)


def evaluate(real, real_y, proc, proc_y, kind: str, classifier: str) -> tuple[float, np.ndarray]:
    """Accuracy of naming the procedural silhouettes' categories, and the predictions."""
    # real objects face either way: train on each real silhouette and its mirror image
    X = np.stack([features(m, kind) for m in real] + [features(m[:, ::-1], kind) for m in real])
    real_y = list(real_y) * 2
    Xp = np.stack([features(m, kind) for m in proc])
    model = _classifier(classifier).fit(X, real_y)
    pred = model.predict(Xp)
    return float(np.mean(pred == np.asarray(proc_y))), pred


def real_ceiling(real, real_y, kind: str, classifier: str) -> float:
    """How well the same descriptor and classifier name *real* silhouettes they were not trained on (10-fold
    cross-validation over the real set, an image and its mirror always in the same fold): the ceiling the
    procedural score should be read against."""
    from sklearn.model_selection import GroupKFold, cross_val_predict

    X = np.stack([features(m, kind) for m in real] + [features(m[:, ::-1], kind) for m in real])
    y = np.asarray(list(real_y) * 2)
    groups = np.tile(np.arange(len(real)), 2)
    pred = cross_val_predict(_classifier(classifier), X, y, groups=groups, cv=GroupKFold(10))
    return float(np.mean(pred[:len(real)] == y[:len(real)]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write the figure (procedural silhouettes with predicted labels) here")
    ap.add_argument("--more", type=int, default=20, help="also name instances 1..MORE with the chosen pair (how "
                    "far the 5-instance result generalises; default 20, 0 = skip)")
    args = ap.parse_args(argv)
    folder = shared_silhouettes()
    if not folder.is_dir():
        print(f"error: real silhouettes not found at {folder} (set VANTAGE_SHARED_DATA)")
        return 2
    real, real_y = load_real(folder)
    proc, proc_y, names = render_library()
    rows = []
    for kind in DESCRIPTORS:
        for clf in CLASSIFIERS:
            acc, pred = evaluate(real, real_y, proc, proc_y, kind, clf)
            ceiling = real_ceiling(real, real_y, kind, clf)
            print(f"{kind:8s} {clf:8s} procedural named {acc:.3f} ({int(round(acc * len(proc)))}/{len(proc)}); "
                  f"held-out real named {ceiling:.3f}; chance 0.0625")
            rows.append((ceiling, acc, kind, clf, pred))
    # the pair chosen on the real set alone: best on held-out real silhouettes (ties: the first listed)
    ceiling, acc, kind, clf, pred = max(rows, key=lambda r: r[0])
    more = None
    if args.more > 0:
        more_masks, more_y, _ = render_library(instances=args.more)
        _, more_pred = evaluate(real, real_y, more_masks, more_y, kind, clf)
        more = (np.asarray(more_y), more_pred)
    print(f"chosen on held-out real silhouettes: {kind} + {clf} (real {ceiling:.3f}); procedural {acc:.3f}; "
          "per category (instances 1-5" + (f"; 1-{args.more}" if more else "") + "):")
    proc_y = np.asarray(proc_y)
    for c in sorted(set(proc_y)):
        sel = proc_y == c
        wrong = ", ".join(sorted(set(pred[sel & (pred != c)])))
        line = f"  {c:9s} {int((pred[sel] == c).sum())}/{int(sel.sum())}"
        if more:
            ms = more[0] == c
            line += f"  {int((more[1][ms] == c).sum())}/{int(ms.sum())}"
        print(line + (f"  (else: {wrong})" if wrong else ""))
    if args.out:
        _figure(proc, proc_y, (acc, kind, clf, pred), Path(args.out))
    return 0


def _figure(proc, proc_y, best, out: Path) -> None:
    from PIL import Image, ImageDraw

    acc, kind, clf, pred = best
    n, cols = 96, 10
    rows = (len(proc) + cols - 1) // cols
    sheet = Image.new("L", (cols * n, rows * (n + 14) + 16), 255)
    d = ImageDraw.Draw(sheet)
    d.text((4, 2), f"descriptor={kind} classifier={clf}: {acc:.0%} named correctly (chance 6%)", fill=0)
    for k, (m, y, p) in enumerate(zip(proc, proc_y, pred)):
        r, c = divmod(k, cols)
        tile = Image.fromarray(((1 - _crop_square(m, n - 8)) * 255).astype(np.uint8))
        sheet.paste(tile, (c * n + 4, 16 + r * (n + 14)))
        d.text((c * n + 4, 16 + r * (n + 14) + n - 6), p if p == y else f"{p}!", fill=0 if p == y else 90)
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out)


if __name__ == "__main__":
    raise SystemExit(main())

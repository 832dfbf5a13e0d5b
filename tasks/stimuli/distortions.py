"""Geirhos et al. (2018) image distortions as pure functions ``f(image, level, rng) -> image``.

Images are float RGB in [0, 1], shape [H, W, 3]; outputs likewise (greyscale outputs have 3 equal
channels). Greyscale = 0.2125 R + 0.7154 G + 0.0721 B (skimage ``rgb2gray`` on the encoded values).
0.4423 is the mean grey of the original stimulus set (padding and target mean). Condition codes are
written exactly as in the model-vs-human human trial tables (``CONDITIONS``; e.g. ``0.00`` for uniform
noise, ``true``/``false`` for opponent colour: ``true`` = the colours unchanged, ``false`` = opponent colours,
as in model-vs-human and the original analysis) and ``EXPERIMENT`` names each distortion's folder there, so
model and human trials join on (experiment, condition) without edits. Source:
``papers/generalisation-humans-dnns.txt`` and ``../shared/reference/distortions.md``.

Where the original code deviated from the paper, ``mode="faithful"`` reproduces the stimuli the humans
saw and ``mode="clean"`` follows the paper's description:

* phase noise — clean: the same phase shift with opposite sign on each frequency's conjugate partner (the
  amplitude spectrum is kept exactly); faithful: the original's indexing — on the fftshift-ed spectrum,
  the block ``[1:, 1:]`` is flattened, its first half gets +shifts, its second half (after the middle
  element, which is the zero frequency for even sides) gets −shifts in the same order, so partners are
  paired in the wrong order: the spectrum is not conjugate-symmetric and taking the real part lowers
  contrast (mean amplitude × 8/π² ≈ 0.81 at 90°, × 2/π ≈ 0.64 at 180°, as measured on the original
  stimuli), while the mean luminance (the zero frequency) is kept. Needs even image sides.
* opponent colour — faithful: linearised through the measured display lookup table
  (``tasks/data/opponent-colour-gamma-lut.csv``, CC BY 4.0) and re-encoded by the nearest table entry,
  as the original; clean: a power law, γ 2.46.
"""
from __future__ import annotations

import dataclasses
import functools
import os

import numpy as np

from infra.images import to_uint8

from .registry import Item, field, register

GREY_MEAN = 0.4423
LUMA = np.array([0.2125, 0.7154, 0.0721])
M_RGB2LMS = np.array([[0.1619982647, 0.208049264, 0.0389347448], [0.0330275785, 0.2496504557, 0.0618343518],
                      [0.0015524055, 0.0198861001, 0.1890224274]])
N_LMS2DKL = np.array([[9.27590805, 9.27590805, 0.0], [7.86421647, -9.33587662, 0.0],
                      [-3.39709047, -3.39709047, 12.16230246]])
GAMMA = 2.46

# condition code -> level, per distortion. The codes are the strings of the model-vs-human human trial
# tables, character for character (checked against them in tests/test_distortions.py); read them as
# strings (pandas would turn "0.00" into 0.0 and "true" into True).
CONDITIONS: dict[str, dict[str, object]] = {
    "colour": {"cr": "colour", "bw": "greyscale"},
    "contrast": {f"c{int(round(c * 100)):02d}" if c < 1 else "c100": c for c in (1.0, .5, .3, .15, .1, .05, .03, .01)},
    "uniform_noise": {f"{w:.2f}": w for w in (0.0, 0.03, 0.05, 0.1, 0.2, 0.35, 0.6, 0.9)},
    "salt_and_pepper": {f"{p:.2f}": p for p in (0.0, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95)},  # no human data
    "low_pass": {f"{s:g}": float(s) for s in (0, 1, 3, 5, 7, 10, 15, 40)},
    "high_pass": {"inf": float("inf"), **{f"{s:g}": s for s in (3.0, 1.5, 1.0, 0.7, 0.55, 0.45, 0.4)}},
    "phase_noise": {str(w): float(w) for w in range(0, 181, 30)},
    "power_equalisation": {"0": False, "pow": True},
    # code = "are the colours true?" (model-vs-human's false-colour experiment: True plotted "true", False
    # "opponent"; True is the unmanipulated control it excludes); level = invert the chromatic axes
    "opponent_colour": {"true": False, "false": True},
    "rotation": {str(d): d for d in (0, 90, 180, 270)},
    # Eidolon I / II / III: (reach, coherence), grain 10; codes reach-coh-grain with coh 10 / 3 / 0
    "eidolon_I": {f"{r}-10-10": (r, 1.0) for r in (1, 2, 4, 8, 16, 32, 64, 128)},
    "eidolon_II": {f"{r}-3-10": (r, 0.3) for r in (1, 2, 4, 8, 16, 32, 64, 128)},
    "eidolon_III": {f"{r}-0-10": (r, 0.0) for r in (1, 2, 4, 8, 16, 32, 64, 128)},
}
EIDOLON_GRAIN = 10.0
# the model-vs-human experiment (folder of human trial tables) of each distortion; "" = no human data
EXPERIMENT = {"colour": "colour", "contrast": "contrast", "uniform_noise": "uniform-noise", "salt_and_pepper": "",
              "low_pass": "low-pass", "high_pass": "high-pass", "phase_noise": "phase-scrambling",
              "power_equalisation": "power-equalisation", "opponent_colour": "false-colour", "rotation": "rotation",
              "eidolon_I": "eidolonI", "eidolon_II": "eidolonII", "eidolon_III": "eidolonIII"}


def normalise_code(distortion: str, code) -> str:
    """The canonical condition code (as in ``CONDITIONS``) for a code read from any table: accepts what
    type guessing makes of the human tables' strings (``0.0`` for ``0.00``, ``True`` for ``true``, ``3.0``
    for ``3``). Raises ``ValueError`` naming the allowed codes."""
    codes = CONDITIONS[distortion]
    text = str(code).strip()
    if text in codes:
        return text
    if text.lower() in codes:
        return text.lower()
    try:
        number = float(text)
    except ValueError:
        number = None
    for k in codes:
        try:
            if number is not None and float(k) == number:
                return k
        except ValueError:  # a code that is not a number (c05, 1-10-10, pow)
            continue
    raise ValueError(f"{distortion}: condition code {code!r} is not one of {', '.join(codes)}")


def grey(img: np.ndarray) -> np.ndarray:
    """[H, W] luminance of an RGB image (or a grey image returned as is)."""
    a = np.asarray(img, np.float64)
    return a @ LUMA if a.ndim == 3 else a


def to_rgb(g: np.ndarray) -> np.ndarray:
    return np.repeat(np.asarray(g, np.float64)[:, :, None], 3, axis=2)


def colour(img, level: str = "colour", rng=None):
    """``colour`` keeps the image; ``greyscale`` converts it."""
    if level not in ("colour", "greyscale"):
        raise ValueError(f"colour level={level!r}; one of colour, greyscale")
    return np.asarray(img, np.float64) if level == "colour" else to_rgb(grey(img))


def contrast(img, c: float, rng=None):
    """Greyscale, then out = (1 − c)/2 + c·grey (around 0.5, not the image mean); c in [0, 1]."""
    return to_rgb((1 - c) / 2 + c * grey(img))


def uniform_noise(img, w: float, rng: np.random.Generator):
    """Greyscale → contrast 30% → + U[−w, w] per pixel → clip to [0, 1]."""
    g = grey(contrast(img, 0.3))
    return to_rgb(np.clip(g + rng.uniform(-w, w, g.shape), 0, 1))


def salt_and_pepper(img, p: float, rng: np.random.Generator):
    """Greyscale → contrast 30% → with probability p/2 a pixel becomes 0, with p/2 it becomes 1."""
    g = grey(contrast(img, 0.3))
    u = rng.random(g.shape)
    g = np.where(u < p / 2, 0.0, np.where(u < p, 1.0, g))
    return to_rgb(g)


def _gauss(g, sigma):
    from scipy.ndimage import gaussian_filter

    return gaussian_filter(g, sigma, mode="constant", cval=GREY_MEAN, truncate=4.0)


def low_pass(img, sigma: float, rng=None):
    """Greyscale → Gaussian filter (σ in pixels; constant padding 0.4423; truncated at 4σ) → clip."""
    g = grey(img)
    return to_rgb(np.clip(_gauss(g, sigma), 0, 1) if sigma > 0 else g)


def high_pass(img, sigma: float, rng=None):
    """Greyscale minus its low-pass (σ), shifted to mean 0.4423, clipped; σ = inf keeps the grey image."""
    g = grey(img)
    if not np.isfinite(sigma):
        return to_rgb(g)
    h = g - _gauss(g, sigma)
    return to_rgb(np.clip(h - h.mean() + GREY_MEAN, 0, 1))


def _partner(shape):
    h, w = shape
    i, j = np.indices(shape)
    return (-i) % h, (-j) % w


def phase_shifts_faithful(shape, width_deg: float, rng: np.random.Generator) -> np.ndarray:
    """The original's random numbers: ((H−1)(W−1))//2 shifts U[−w, w) in radians, drawn as
    ``(random() − 0.5)·2·w/180·π`` (the same floating-point steps, so equal uniforms give equal shifts)."""
    n = (shape[0] - 1) * (shape[1] - 1)
    return (rng.random(n // 2) - 0.5) * 2 * width_deg / 180 * np.pi


def phase_noise(img, width_deg: float, rng: np.random.Generator, mode: str = "clean", clip: bool = True):
    """Greyscale → FFT → phases + U[−w, w] → inverse FFT → real part → clip (see module docstring for modes).
    ``clip=False`` returns the unclipped result (its amplitude spectrum is the input's in clean mode; its
    mean is the input's in both modes: the zero frequency is never shifted)."""
    if mode not in ("clean", "faithful"):
        raise ValueError(f"mode={mode!r}; one of clean, faithful")
    g = grey(img)
    if mode == "faithful":
        if g.shape[0] % 2 or g.shape[1] % 2:
            raise ValueError(f"phase noise mode='faithful' needs even image sides (got {g.shape[0]}x{g.shape[1]}): "
                             "the original's index block is centred on the zero frequency only then; "
                             "use an even size or mode='clean'")
        shifts = phase_shifts_faithful(g.shape, width_deg, rng)
        f = np.fft.fftshift(np.fft.fft2(g))
        phase = np.angle(f)
        block = phase[1:, 1:].copy().ravel()  # row 0 / column 0 (the Nyquist rows) are left alone
        half = block.size // 2
        block[:half] += shifts
        block[half + 1:] -= shifts  # same order, not mirrored: the original's pairing; block[half] = DC
        phase[1:, 1:] = block.reshape(g.shape[0] - 1, g.shape[1] - 1)
        out = np.real(np.fft.ifft2(np.fft.ifftshift(np.abs(f) * np.exp(1j * phase))))
        return to_rgb(np.clip(out, 0, 1) if clip else out)
    f = np.fft.fft2(g)
    w = np.deg2rad(width_deg)
    noise = rng.uniform(-w, w, g.shape)
    pi, pj = _partner(g.shape)
    i, j = np.indices(g.shape)
    lin, plin = i * g.shape[1] + j, pi * g.shape[1] + pj
    noise = np.where(lin < plin, noise, -noise[pi, pj])
    noise[lin == plin] = 0.0  # self-conjugate frequencies (DC, Nyquist) stay real
    out = np.real(np.fft.ifft2(np.abs(f) * np.exp(1j * (np.angle(f) + noise))))
    return to_rgb(np.clip(out, 0, 1) if clip else out)


def mean_amplitude_spectrum(images) -> np.ndarray:
    """Mean |FFT| of the greyscale images (all the same shape): the target of power equalisation."""
    spectra = [np.abs(np.fft.fft2(grey(im))) for im in images]
    return np.mean(spectra, axis=0)


def power_equalisation(img, amplitude: np.ndarray | None, rng=None):
    """Greyscale → FFT → amplitudes replaced by ``amplitude`` (the set's mean spectrum), phases kept →
    inverse → real → clip. ``amplitude=None`` (the ``0`` condition) returns the greyscale image."""
    g = grey(img)
    if amplitude is None:
        return to_rgb(g)
    if amplitude.shape != g.shape:
        raise ValueError(f"amplitude spectrum shape {amplitude.shape} != image {g.shape}")
    out = np.real(np.fft.ifft2(amplitude * np.exp(1j * np.angle(np.fft.fft2(g)))))
    return to_rgb(np.clip(out, 0, 1))


def load_spectrum(path: str, size: int) -> np.ndarray:
    """A mean amplitude spectrum from a ``.npy`` file in the original's layout (zero frequency centred, i.e.
    ``fftshift``-ed, as model-vs-human's ``mean_power_spectrum_grey.npy``), returned in NumPy's FFT layout
    for :func:`power_equalisation`. Float [size, size], finite, non-negative."""
    from .registry import ConfigError

    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ConfigError(f"spectrum={path!r}: cannot read a .npy array ({type(e).__name__}: {e})") from None
    if a.shape != (size, size) or not np.issubdtype(a.dtype, np.number):
        raise ConfigError(f"spectrum={path!r}: need a numeric [{size}, {size}] amplitude spectrum (size={size}), "
                          f"got {a.dtype} {list(a.shape)}; make one with mean_amplitude_spectrum or set size")
    a = np.asarray(a, np.float64)
    if not np.isfinite(a).all() or (a < 0).any():
        raise ConfigError(f"spectrum={path!r}: amplitudes must be finite and >= 0")
    return np.fft.ifftshift(a)


@functools.lru_cache(maxsize=1)
def display_lut() -> np.ndarray:
    """The measured display lookup table: float64 [256], relative luminance of 8-bit level k, increasing
    (``tasks/data/opponent-colour-gamma-lut.csv``; CC BY 4.0, Geirhos et al. 2018)."""
    from importlib import resources

    text = resources.files("tasks.data").joinpath("opponent-colour-gamma-lut.csv").read_text()
    rows = [line.split(",") for line in text.splitlines() if line and not line.startswith(("#", "grey_level"))]
    lut = np.array([float(v) for _, v in rows])
    if lut.shape != (256,) or not np.all(np.diff(lut) > 0):
        raise RuntimeError("tasks/data/opponent-colour-gamma-lut.csv: need 256 increasing values; reinstall the package")
    return lut


def lut_encode(lin: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Nearest table entry for each linear value (clipped to [0, 1]) → its 8-bit level / 255, ties to the
    lower level: the original's ``argmin |lut − v|``, by binary search (tested against the argmin)."""
    v = np.clip(np.asarray(lin, np.float64), 0, 1)
    i = np.clip(np.searchsorted(lut, v), 1, len(lut) - 1)
    lo, hi = lut[i - 1], lut[i]
    return np.where(v - lo <= hi - v, i - 1, i) / 255.0


def _linearise(img, mode: str):
    a = np.clip(np.asarray(img, np.float64), 0, 1)
    if mode == "faithful":
        return display_lut()[np.rint(a * 255).astype(np.intp)]  # the original indexes 8-bit levels
    return a ** GAMMA


def rgb_to_dkl(img, mode: str = "clean"):
    white = M_RGB2LMS @ np.full(3, 0.5)
    return (_linearise(img, mode) @ M_RGB2LMS.T - white) @ N_LMS2DKL.T


def dkl_to_rgb(dkl, mode: str = "clean"):
    white = M_RGB2LMS @ np.full(3, 0.5)
    lms = dkl @ np.linalg.inv(N_LMS2DKL).T + white
    lin = np.clip(lms @ np.linalg.inv(M_RGB2LMS).T, 0, 1)
    return lut_encode(lin, display_lut()) if mode == "faithful" else lin ** (1 / GAMMA)


def opponent_colour(img, invert: bool = True, rng=None, mode: str = "clean"):
    """Linearise → LMS → minus white → DKL → negate both chromatic axes, keep luminance → back → re-encode.
    ``mode="faithful"``: the measured display table (input quantised to 8 bits, output exact 8-bit levels);
    ``"clean"``: γ 2.46."""
    if mode not in ("clean", "faithful"):
        raise ValueError(f"mode={mode!r}; one of clean, faithful")
    if not invert:
        return np.asarray(img, np.float64)
    d = rgb_to_dkl(img, mode)
    d[..., 1:] *= -1
    return dkl_to_rgb(d, mode)


def eidolon(img, level: tuple[float, float], rng: np.random.Generator, mode: str = "faithful"):
    """Eidolon (PartiallyCoherentDisarray, ``tasks/stimuli/eidolon.py``) with level = (reach, coherence),
    grain 10, on the greyscale image (0.299 R + 0.587 G + 0.114 B as in the toolbox)."""
    from .eidolon import eidolon as _eidolon

    reach, coherence = level
    a = np.asarray(img, np.float64)
    g = (a @ np.array([0.299, 0.587, 0.114]) if a.ndim == 3 else a) * 255.0
    return to_rgb(_eidolon(g, reach, coherence, EIDOLON_GRAIN, rng, mode) / 255.0)


def rotation(img, degrees: int, rng=None):
    """Exact rotation of the greyscale image by a multiple of 90° (counter-clockwise)."""
    if degrees % 90:
        raise ValueError(f"rotation={degrees}: multiples of 90 only")
    return to_rgb(np.rot90(grey(img), k=(degrees // 90) % 4))


# ---------------------------------------------------------------------- dataset generator
SKIMAGE_PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "cat", "camera", "immunohistochemistry", "retina")
DISTORTIONS = tuple(CONDITIONS)


@dataclasses.dataclass(frozen=True)
class DistortionConfig:
    distortions: tuple = field(tuple(d for d in CONDITIONS if not d.startswith("eidolon")),
                               "which distortions (add eidolon_I/II/III: about 1 s per image)", choices=DISTORTIONS)
    source: str = field("skimage", "'skimage' (photos bundled with scikit-image) or a folder of images")
    size: int = field(224, "output size: centre crop to a square, then resize (pixels)", range=(16, 4096))
    mode: str = field("faithful", "stimuli as the humans saw them, or as the paper describes",
                      choices=("faithful", "clean"))
    eidolon_size: int = field(256, "Eidolon images are made at this size (the toolbox's 256)", range=(16, 1024))
    spectrum: str = field("", "power equalisation target: a .npy amplitude spectrum [size, size] in the "
                              "original's centred (fftshift) layout; empty = the mean spectrum of the source images")


def _square(img: np.ndarray, size: int) -> np.ndarray:
    from PIL import Image

    a = np.asarray(img)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    a = a[..., :3]
    h, w = a.shape[:2]
    s = min(h, w)
    a = a[(h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s]
    if a.dtype != np.uint8:
        a = to_uint8(a)
    return np.asarray(Image.fromarray(a).resize((size, size), Image.Resampling.LANCZOS), np.float64) / 255.0


@functools.lru_cache(maxsize=4)
def _sources(source: str) -> tuple[tuple[str, str], ...]:
    if source == "skimage":
        return tuple(("skimage", n) for n in SKIMAGE_PHOTOS)
    from .gratings import folder_images

    return tuple(("file", p) for p, _ in folder_images(source))


@functools.lru_cache(maxsize=64)
def _load(src: tuple[str, str], size: int) -> np.ndarray:
    from infra.images import read_image_array, UnreadableImage

    from .writer import SkipItem

    if src[0] == "skimage":
        import skimage.data

        return _square(getattr(skimage.data, src[1])(), size)
    try:  # the one image loader: 16/32-bit images scaled by their range, bombs skipped with a reason
        return _square(read_image_array(src[1], "RGB"), size)
    except UnreadableImage as e:
        raise SkipItem(str(e)) from None


@functools.lru_cache(maxsize=4)
def _set_spectrum(source: str, size: int) -> np.ndarray:
    from .writer import SkipItem

    imgs = []
    for s in _sources(source):
        try:
            imgs.append(_load(s, size))
        except SkipItem:
            pass
    return mean_amplitude_spectrum(imgs)


@functools.lru_cache(maxsize=4)
def _file_spectrum(path: str, size: int) -> np.ndarray:
    return load_spectrum(path, size)


def distortion_items(cfg: DistortionConfig, seed: int):
    from .registry import ConfigError

    if cfg.mode == "faithful" and "phase_noise" in cfg.distortions and cfg.size % 2:
        raise ConfigError(f"size={cfg.size}: phase noise in mode=faithful needs an even size (the original's "
                          "index block is centred on the zero frequency only then); use an even size or mode=clean")
    if cfg.spectrum and "power_equalisation" in cfg.distortions:
        _file_spectrum(cfg.spectrum, cfg.size)  # fail early, naming the file, before any image is made
    for k, src in enumerate(_sources(cfg.source)):
        if src[0] == "skimage":
            name, source_file = src[1], f"skimage.data.{src[1]}"
        else:
            name = os.path.splitext(os.path.basename(src[1]))[0]
            source_file = os.path.relpath(src[1], cfg.source)  # relative to source=: portable
        for dist in cfg.distortions:
            for code in CONDITIONS[dist]:
                yield Item(f"{dist}_{code}", f"{k:04d}_{name}_{dist}_{code}",
                           {"distortion": dist, "experiment": EXPERIMENT[dist], "code": code, "source_image": name,
                            "source_file": source_file, "_src": src, "_k": k, "_seed": seed},
                           f"{k:04d}_{name}")


def render(cfg: DistortionConfig, item: Item):
    img = _load(item.params["_src"], cfg.size)
    dist, code = item.params["distortion"], item.params["code"]
    level = CONDITIONS[dist][code]
    # the dataset seed first: a different seed gives different draws for every random distortion
    rng = np.random.default_rng([item.params["_seed"], item.params["_k"], DISTORTIONS.index(dist),
                                 list(CONDITIONS[dist]).index(code)])
    if dist == "phase_noise":
        out = phase_noise(img, level, rng, cfg.mode)
    elif dist == "power_equalisation":
        target = None
        if level:
            target = _file_spectrum(cfg.spectrum, cfg.size) if cfg.spectrum else _set_spectrum(cfg.source, cfg.size)
        out = power_equalisation(img, target)
    elif dist == "opponent_colour":
        out = opponent_colour(img, level, mode=cfg.mode)
    elif dist.startswith("eidolon"):
        out = eidolon(_load(item.params["_src"], cfg.eidolon_size), level, rng, cfg.mode)
    else:
        out = globals()[dist](img, level, rng)
    return to_uint8(out), {"level": str(level)}


register("image_distortions", DistortionConfig, "Geirhos et al. (2018) image distortions at the human conditions",
         "papers/generalisation-humans-dnns.txt", items=distortion_items, render=render,
         test_params={"size": 32, "distortions": ["uniform_noise", "salt_and_pepper", "phase_noise"]})

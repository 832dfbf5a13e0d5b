"""MindSet Thatcher illusion (``mindset-vision.txt`` C.2.9; Thompson 1980; words after Wong et al. 2010):
faces and words, upright or inverted, normal or "thatcherized" (parts rotated by 180° in place).

Conditions (both datasets): ``upright``, ``inverted``, ``thatcherized_upright``, ``thatcherized_inverted``;
the four images of one face or word sample share a ``set_id``. The human result: an upright thatcherized
face looks grotesque, an inverted one hardly different, so a similarity judgment should find the inverted
pair (inverted vs thatcherized_inverted) more similar than the upright pair.

Exactness: every manipulated region is an integer pixel box [x0, x1) × [y0, y1) whose centre is the
rotation centre, and thatcherizing replaces it by the same box of the rendered upright image flipped in both
axes (``block[::-1, ::-1]``, an exact 180° rotation of the pixels). ``inverted`` is the whole canvas so
flipped. Outside the boxes the thatcherized image is the upright image, pixel for pixel; the boxes are
recorded as columns and the tests check all of this on the PNGs.

* ``thatcher_faces`` — procedural faces (the original used 100 CelebA photos, whose terms are restrictive,
  with landmark detection): head, hair, ears, eyes with iris, pupil, lid line and brow, nose, lips (thin upper,
  full lower, corners raised), skin with soft shading; all proportions and colours drawn from the seed.
  The regions are the two eyes (with their brows) and the mouth, each centred on the feature, so the feature
  turns in place: brows end up under the eyes, the smile becomes a frown. Edges are blended: the rotated box
  is mixed with the original over ``blend`` px at its border (linear ramp), as the original blurred them;
  the interior is the exact rotation.
* ``thatcher_words`` — upper-case words from ``tasks/data/mindset/words-en.txt`` (``words_file=`` for one's
  own list, e.g. the original's corpus; or random letter strings),
  each letter set separately in one of ten fonts matplotlib ships (DejaVu, STIX: free licences), with a
  random vertical jitter (up to ``jitter`` × the font size); ``letters_to_rotate`` letters, chosen among
  those that change under a half turn (not H I N O S X Z), are rotated in their own tight ink box. No
  blending: the boxes are 2+ px apart, on a uniform background.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from pathlib import Path

import numpy as np

from ..registry import ConfigError, Item, field
from .common import (MindsetConfig, Shape, background_params, background_rgb, check_rgb, disc, item_rng,
                     new_canvas, paint, paint_coverage, polygon, register_mindset, segment, text_coverage, to_uint8)
from .illusions_raster import paint_fast

CONDITIONS = ("upright", "inverted", "thatcherized_upright", "thatcherized_inverted")


def rotate_boxes(img: np.ndarray, boxes, blend: int = 0) -> np.ndarray:
    """``img`` (uint8 [H, W] or [H, W, 3]) with each box (x0, y0, x1, y1; integers, exclusive ends) rotated
    by 180° about its centre. ``blend`` > 0 mixes the rotated block with the original over that many px at
    the box's border (weight of the rotated block: min(1, (distance to the border + 0.5) / blend)); the
    interior deeper than ``blend`` px is the exact rotation."""
    out = img.copy()
    for x0, y0, x1, y1 in boxes:
        block = img[y0:y1, x0:x1]
        rot = block[::-1, ::-1]
        if blend <= 0:
            out[y0:y1, x0:x1] = rot
            continue
        h, w = block.shape[:2]
        dy = np.minimum(np.arange(h), np.arange(h)[::-1])
        dx = np.minimum(np.arange(w), np.arange(w)[::-1])
        m = np.minimum(1.0, (np.minimum(dy[:, None], dx[None, :]) + 0.5) / blend)
        if block.ndim == 3:
            m = m[:, :, None]
        out[y0:y1, x0:x1] = np.floor(m * rot + (1 - m) * block + 0.5).astype(img.dtype)
    return out


# ============================================================================================ faces
def ellipse(cx: float, cy: float, a: float, b: float, rotation_deg: float = 0.0) -> Shape:
    """Filled ellipse, semi-axes a (along x before rotation) and b, rotated clockwise on screen."""
    t = math.radians(rotation_deg)
    c, s = math.cos(t), math.sin(t)

    def inside(x, y):
        dx, dy = x - cx, y - cy
        u, v = dx * c + dy * s, -dx * s + dy * c
        return (u / a) ** 2 + (v / b) ** 2 <= 1.0

    r = max(a, b)
    return Shape((cx - r, cy - r, cx + r, cy + r), inside)


def _lerp(c0, c1, t):
    return tuple(int(round(a + (b - a) * t)) for a, b in zip(c0, c1))


@dataclasses.dataclass(frozen=True)
class ThatcherFacesConfig(MindsetConfig):
    num_faces: int = field(100, "different faces (4 images each)", range=(1, 1_000_000))
    blend: int = field(5, "px over which each rotated region's border is blended with the face (0 = none)",
                       range=(0, 20))

    def __post_init__(self):
        super().__post_init__()


def face_params(rng: np.random.Generator, S: int) -> dict:
    """Every proportion and colour of one face (px at canvas S; colours RGB 0-255)."""
    cx, cy = S / 2, S / 2 + 0.02 * S
    hw = rng.uniform(0.27, 0.32) * S  # head half width
    hh = hw * rng.uniform(1.22, 1.36)
    skin = _lerp((238, 205, 180), (120, 82, 60), rng.uniform())
    hair = _lerp((40, 28, 20), (200, 160, 90), rng.uniform() ** 2)
    iris = _lerp((60, 40, 20), (70, 120, 160), rng.uniform())
    eye_dx = round(rng.uniform(0.105, 0.125) * S)
    eye_y = round(cy - rng.uniform(0.07, 0.1) * S)
    return {"cx": round(cx), "cy": cy, "head_half_width": hw, "head_half_height": hh,
            "skin": skin, "hair": hair, "iris": iris, "lips": _lerp(skin, (170, 40, 50), rng.uniform(0.5, 0.8)),
            "eye_dx": eye_dx, "eye_y": eye_y, "eye_a": rng.uniform(0.045, 0.055) * S,
            "eye_b": rng.uniform(0.02, 0.026) * S, "iris_r": rng.uniform(0.016, 0.02) * S,
            "brow_dy": rng.uniform(0.045, 0.06) * S, "brow_tilt": rng.uniform(4, 14),
            "brow_w": rng.uniform(0.008, 0.014) * S, "nose_len": rng.uniform(0.07, 0.1) * S,
            "mouth_y": round(cy + rng.uniform(0.14, 0.17) * S), "mouth_w": rng.uniform(0.15, 0.2) * S,
            "smile": rng.uniform(0.008, 0.02) * S, "upper_lip": rng.uniform(0.01, 0.015) * S,
            "lower_lip": rng.uniform(0.02, 0.03) * S, "hair_line": rng.uniform(0.35, 0.55)}


def face_regions(f: dict, S: int) -> dict[str, tuple[int, int, int, int]]:
    """Integer boxes (x0, y0, x1, y1) centred on each eye and on the mouth, holding the whole feature (the
    eye's brow included; the box is symmetric about the eye, so the brow turns to below it)."""
    ex_half = int(math.ceil(f["eye_a"] + 0.02 * S))
    ey_half = int(math.ceil(f["brow_dy"] + f["brow_w"] + 0.012 * S))
    mx_half = int(math.ceil(f["mouth_w"] / 2 + 0.02 * S))
    my_half = int(math.ceil(max(f["smile"] + f["upper_lip"], f["lower_lip"]) + 0.02 * S))
    out = {}
    for name, x in (("left_eye", f["cx"] - f["eye_dx"]), ("right_eye", f["cx"] + f["eye_dx"])):
        out[name] = (x - ex_half, f["eye_y"] - ey_half, x + ex_half, f["eye_y"] + ey_half)
    out["mouth"] = (f["cx"] - mx_half, f["mouth_y"] - my_half, f["cx"] + mx_half, f["mouth_y"] + my_half)
    return out


def draw_face(f: dict, S: int, bg, antialias: bool = True) -> np.ndarray:
    """uint8 [S, S, 3] upright face (see :func:`face_params`)."""
    img = new_canvas(S, bg)
    cx, cy, hw, hh = f["cx"], f["cy"], f["head_half_width"], f["head_half_height"]
    hair = f["hair"]
    # hair behind the head, ears, head; the hair cap over the top of the head
    paint_fast(img, ellipse(cx, cy - 0.06 * hh, hw * 1.08, hh * 0.98), hair, antialias)
    for sx in (-1, 1):
        paint_fast(img, ellipse(cx + sx * hw * 0.98, cy - 0.02 * hh, 0.1 * hw, 0.2 * hh), f["skin"], antialias)
    head = ellipse(cx, cy, hw, hh)
    paint_fast(img, head, f["skin"], antialias)
    yy, xx = np.mgrid[0:S, 0:S] + 0.5
    shade = 1 - 0.07 * np.clip(((xx - cx) / hw) ** 2 + ((yy - cy) / hh) ** 2, 0, 1)  # soft: rounder look
    inside = ((xx - cx) / hw) ** 2 + ((yy - cy) / hh) ** 2 <= 1
    img[inside] *= shade[inside][:, None]
    cap_y = cy - hh + f["hair_line"] * hh * 0.75
    paint_fast(img, Shape((cx - hw, cy - hh, cx + hw, cap_y),
                          lambda x, y: head.inside(x, y) & (y <= cap_y - 0.15 * hh * np.cos((x - cx) / hw * 1.4))),
               hair, antialias)
    # eyes: white, iris, pupil, upper lid line, brow (tilted: outer end lower)
    for sx in (-1, 1):
        ex, ey = cx + sx * f["eye_dx"], f["eye_y"]
        paint_fast(img, ellipse(ex, ey, f["eye_a"], f["eye_b"]), (245, 245, 240), antialias)
        paint(img, disc(ex, ey + 0.1 * f["eye_b"], f["iris_r"]), f["iris"], antialias)
        paint(img, disc(ex, ey + 0.1 * f["eye_b"], f["iris_r"] * 0.45), (15, 15, 15), antialias)
        t = np.linspace(-1, 1, 12)
        lid = np.stack([ex + f["eye_a"] * t, ey - f["eye_b"] * np.sqrt(1 - t ** 2) * 1.05], 1)
        for a, b in zip(lid[:-1], lid[1:]):
            paint(img, segment(a, b, max(1.2, 0.006 * S), "round"), (40, 30, 25), antialias)
        tilt = math.radians(f["brow_tilt"])
        by = ey - f["brow_dy"]
        inner = (ex - sx * f["eye_a"] * 0.9, by - math.sin(tilt) * f["eye_a"] * 0.5)
        outer = (ex + sx * f["eye_a"] * 1.05, by + math.sin(tilt) * f["eye_a"] * 0.5)
        paint(img, segment(inner, outer, f["brow_w"] * 2, "round"), tuple(int(c * 0.8) for c in hair), antialias)
    # nose: a shaded ridge and two nostrils
    ny = f["eye_y"] + f["nose_len"]
    dark = tuple(int(c * 0.7) for c in f["skin"])
    paint(img, segment((cx + 0.01 * S, f["eye_y"] + 0.02 * S), (cx + 0.018 * S, ny), max(1.2, 0.008 * S), "round"),
          dark, antialias)
    for sx in (-1, 1):
        paint(img, ellipse(cx + sx * 0.018 * S, ny + 0.004 * S, 0.011 * S, 0.006 * S), dark, antialias)
    # mouth: thin upper lip and full lower lip around a mouth line whose corners are raised (a smile)
    mx, my, w = cx, f["mouth_y"], f["mouth_w"]
    t = np.linspace(-1, 1, 40)
    line_y = my - f["smile"] * t ** 2
    top = line_y - f["upper_lip"] * np.sqrt(1 - t ** 2) * (1 - 0.35 * np.exp(-(t / 0.15) ** 2))  # cupid's bow
    bottom = line_y + f["lower_lip"] * np.sqrt(1 - t ** 2)
    xs = mx + w / 2 * t
    paint(img, polygon(np.concatenate([np.stack([xs, top], 1), np.stack([xs[::-1], line_y[::-1]], 1)])),
          f["lips"], antialias)
    paint(img, polygon(np.concatenate([np.stack([xs, line_y], 1), np.stack([xs[::-1], bottom[::-1]], 1)])),
          tuple(min(255, int(c * 1.08)) for c in f["lips"]), antialias)
    for a, b in zip(np.stack([xs, line_y], 1)[:-1], np.stack([xs, line_y], 1)[1:]):
        paint(img, segment(a, b, max(1.0, 0.006 * S), "round"), (90, 25, 30), antialias)
    return to_uint8(img)


def faces_items(cfg: ThatcherFacesConfig, seed: int):
    S = cfg.canvas_size
    for k in range(cfg.num_faces):
        rng = item_rng(seed, "face", k)
        f = face_params(rng, S)
        regions = face_regions(f, S)
        bg = background_params(cfg, rng)
        cols = {f"{n}_{c}": int(v) for n, box in regions.items() for c, v in zip(("x0", "y0", "x1", "y1"), box)}
        for cond in CONDITIONS:
            yield Item(cond, f"face_{k:04d}_{cond}", {"face_id": k, "thatcherized": cond.startswith("thatch"),
                                                      "inverted": cond.endswith("inverted"), **cols, **bg,
                                                      "_face": tuple(sorted(f.items()))}, set_id=f"face_{k:04d}")


@functools.lru_cache(maxsize=8)
def _face_image(face: tuple, S: int, bg: tuple, antialias: bool, blend: int, thatcherize: bool) -> np.ndarray:
    f = dict(face)
    img = draw_face(f, S, bg, antialias)
    if thatcherize:
        img = rotate_boxes(img, face_regions(f, S).values(), blend)
    return img


def faces_render(cfg: ThatcherFacesConfig, item: Item):
    p = item.params
    # the 4 conditions of a face are consecutive items: the face is drawn once per process (cached)
    img = _face_image(p["_face"], cfg.canvas_size, background_rgb(p), cfg.antialias, cfg.blend, p["thatcherized"])
    return (img[::-1, ::-1] if p["inverted"] else img), {}


register_mindset(
    "thatcher_faces", ThatcherFacesConfig,
    "Thatcher faces: procedural faces upright / inverted, normal / thatcherized (eyes and mouth rotated 180° in "
    "place, blended edges); the 4 images of a face share a set_id", "mindset-vision.txt C.2.9; Thompson 1980",
    items=faces_items, render=faces_render, conditions=CONDITIONS, paper={"num_faces": 100},
    lite={"num_faces": 3}, figure="Thompson (1980) Fig. 1")


# ============================================================================================ words
FONTS = ("DejaVuSans", "DejaVuSans-Bold", "DejaVuSans-Oblique", "DejaVuSerif", "DejaVuSerif-Bold",
         "DejaVuSerif-Italic", "DejaVuSansMono", "DejaVuSansMono-Bold", "STIXGeneral", "STIXGeneralBol")
SYMMETRIC = set("HINOSXZ")  # letters a half turn leaves (nearly) unchanged: never the rotated ones
WORDS_FILE = Path(__file__).resolve().parents[2] / "data" / "mindset" / "words-en.txt"


@functools.lru_cache(maxsize=4)
def word_list(path: str = "") -> tuple[str, ...]:
    """The words of ``path`` (default: the bundled list), upper case, in file order: one per line, '#' lines
    and blank lines skipped. An unreadable file or a word with other than the letters A-Z is a ConfigError."""
    f = Path(path) if path else WORDS_FILE
    try:
        lines = f.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"words_file={path!r}: cannot read it ({type(e).__name__}: {e}); give a UTF-8 text "
                          "file with one word per line") from None
    words = tuple(w.strip().upper() for w in lines if w.strip() and not w.lstrip().startswith("#"))
    bad = [w for w in words if not w.isascii() or not w.isalpha()]
    if bad:
        raise ConfigError(f"words_file={path or str(WORDS_FILE)!r}: {len(bad)} entries are not plain letters A-Z, "
                          f"e.g. {bad[0]!r}")
    return words


@dataclasses.dataclass(frozen=True)
class ThatcherWordsConfig(MindsetConfig):
    num_words: int = field(100, "different words (or strings)", range=(1, 100_000))
    samples_per_word: int = field(5, "samples (font, size, jitter, rotated letters) per word", range=(1, 10_000))
    letters: tuple = field((5, 8), "[min, max] letters per word (inclusive)", range=(3, 12))
    letters_to_rotate: int = field(2, "letters rotated by 180° in the thatcherized images", range=(1, 6))
    font_size: tuple = field((18, 35), "[min, max] font size (px, em; lowered if the word does not fit)",
                             range=(8, 200))
    jitter: float = field(0.15, "maximum vertical offset of each letter (fraction of the font size; the "
                          "original's 'jittery=0.04' has no stated unit)", range=(0.0, 1.0))
    fonts: tuple = field(FONTS, "fonts (matplotlib's bundled TrueType files)", choices=FONTS)
    random_strings: bool = field(False, "random letter strings instead of English words")
    words_file: str = field("", "a text file of words, one per line ('' = the bundled common English words, "
                            "tasks/data/mindset/words-en.txt)")
    text_color: tuple = field((255, 255, 255), "RGB of the letters", range=(0, 255))

    def __post_init__(self):
        super().__post_init__()
        check_rgb("text_color", self.text_color)
        for name in ("letters", "font_size"):
            v = getattr(self, name)
            if len(v) != 2 or v[0] > v[1]:
                raise ConfigError(f"{name}={list(v)!r}: must be [min, max] with min <= max")
        if not self.fonts:
            raise ConfigError("fonts=[]: give at least one of " + ", ".join(FONTS))
        if self.letters_to_rotate > self.letters[0]:
            raise ConfigError(f"letters_to_rotate={self.letters_to_rotate} is more than the shortest word "
                              f"(letters min {self.letters[0]})")
        if not self.random_strings:
            n = len([w for w in word_list(self.words_file) if self.letters[0] <= len(w) <= self.letters[1]])
            if n < self.num_words:
                raise ConfigError(f"num_words={self.num_words}: the word list has only {n} words of "
                                  f"{self.letters[0]}-{self.letters[1]} letters; lower num_words or widen letters")


def words_items(cfg: ThatcherWordsConfig, seed: int):
    S = cfg.canvas_size
    rng = item_rng(seed, "words")
    if cfg.random_strings:
        alphabet = np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
        words = ["".join(rng.choice(alphabet, int(rng.integers(cfg.letters[0], cfg.letters[1] + 1))))
                 for _ in range(cfg.num_words)]
    else:
        pool = [w for w in word_list(cfg.words_file) if cfg.letters[0] <= len(w) <= cfg.letters[1]]
        words = [pool[i] for i in sorted(rng.choice(len(pool), cfg.num_words, replace=False))]
    for wi, word in enumerate(words):
        for k in range(cfg.samples_per_word):
            r = item_rng(seed, "word", wi, k)
            font = cfg.fonts[int(r.integers(len(cfg.fonts)))]
            size = int(r.integers(cfg.font_size[0], cfg.font_size[1] + 1))
            allowed = [i for i, c in enumerate(word) if c not in SYMMETRIC]
            if len(allowed) < cfg.letters_to_rotate:  # a word of symmetric letters only: any letters then
                allowed = list(range(len(word)))
            rot = sorted(int(i) for i in r.choice(allowed, cfg.letters_to_rotate, replace=False))
            jit = [float(v) for v in r.uniform(-cfg.jitter, cfg.jitter, len(word)) * size]
            bg = background_params(cfg, r)
            sid = f"w{wi:04d}_s{k:02d}"
            for cond in CONDITIONS:
                yield Item(cond, f"{sid}_{cond}", {"word": word, "font": font, "font_size_requested": size,
                                                   "rotated_letters": "".join(word[i] for i in rot),
                                                   "rotated_indices": ",".join(map(str, rot)),
                                                   "thatcherized": cond.startswith("thatch"),
                                                   "inverted": cond.endswith("inverted"), "_jitter": tuple(jit),
                                                   **bg}, set_id=sid)


def layout_word(word: str, font: str, size: int, jitter, S: int, antialias: bool = True):
    """Letter coverages and their integer boxes (x0, y0, x1, y1) for ``word`` centred on the canvas, bottoms
    of the ink boxes on one baseline (+ jitter), boxes at least 2 px apart; the size is lowered by 1 px
    until the word fits within 4 px of the sides. Returns (coverages, boxes, size used)."""
    while True:
        covs = [text_coverage(c, size, font, antialias=antialias) for c in word]
        gap = max(2, int(round(0.12 * size)))
        total = sum(c.shape[1] for c in covs) + gap * (len(word) - 1)
        if total <= S - 8 or size <= 6:
            break
        size -= 1
    height = max(c.shape[0] for c in covs)
    base = int(round(S / 2 + height / 2))
    x = int(round((S - total) / 2))
    boxes = []
    for c, j in zip(covs, jitter):
        h, w = c.shape
        y1 = int(np.clip(base + round(j), h, S))
        boxes.append((x, y1 - h, x + w, y1))
        x += w + gap
    return covs, boxes, size


def words_render(cfg: ThatcherWordsConfig, item: Item):
    p = item.params
    S = cfg.canvas_size
    covs, boxes, size = layout_word(p["word"], p["font"], p["font_size_requested"], p["_jitter"], S, cfg.antialias)
    rot = {int(i) for i in p["rotated_indices"].split(",")} if p["thatcherized"] else set()
    img = new_canvas(S, background_rgb(p))
    for i, (c, (x0, y0, _, _)) in enumerate(zip(covs, boxes)):
        paint_coverage(img, c[::-1, ::-1] if i in rot else c, (y0, x0), cfg.text_color)
    out = to_uint8(img)
    idx = sorted(int(i) for i in p["rotated_indices"].split(","))
    extra = {"font_size": size}
    for n, i in enumerate(idx):  # the rotated letters' boxes (upright coordinates), for matched comparisons
        extra.update({f"rotated{n}_{c}": int(v) for c, v in zip(("x0", "y0", "x1", "y1"), boxes[i])})
    return (out[::-1, ::-1] if p["inverted"] else out), extra


register_mindset(
    "thatcher_words", ThatcherWordsConfig,
    "Thatcher words: upper-case words upright / inverted, normal / thatcherized (letters rotated 180° in place), "
    "10 free fonts, size and jitter drawn per sample; the 4 images of a sample share a set_id",
    "mindset-vision.txt C.2.9; Wong et al. 2010", items=words_items, render=words_render, conditions=CONDITIONS,
    paper={"num_words": 100, "samples_per_word": 5}, lite={"num_words": 3, "samples_per_word": 1},
    figure="Wong et al. (2010) Fig. 1")

"""Contact sheets of a built 3D-PC: random images per label, captioned, for a person to check that every
image can be answered the way its label says (issue 10's look check).

``python -m tasks.threedpc.sheet <build> task=vpt split=test n=40 out=docs/img/threedpc_sheet_vpt.png``
(the older ``--task vpt --out x.png`` spelling works too)

The first ``n`` tiles are label 0, the next ``n`` label 1 (VPT: 0 = the observer cannot see the ball;
depth: 0 = the ball is nearer the viewer than the observer), drawn with a seeded sample that takes one
frame per setting before any setting's second (``any_frames=true``: plain random frames). Each caption: tile
index, label, VPT reason or depth gap, the observer's / ball's height on screen (pixels at the build's size)
and the scene. Bad input prints ``error: ...`` and exits 2.

``blind=true`` makes a sheet for a rater who must not see the labels: the same sample in a seeded random order,
each caption only the tile index, and the answer key written next to the PNG (``<out>.key.csv``: tile,
file_name, label, reason, scene). ``score=answers.csv`` (columns tile, answer: 0, 1 or blank for unsure)
scores a rater's answers against that key.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from infra.cli import REQUIRED, run_options
from infra.schema import field

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


def pick_images(md, task: str, split: str, n: int, seed: int = 0, spread: bool = True):
    """Up to ``n`` rows per label (0 then 1) of ``task``'s images in ``split``, sampled with ``seed``.

    ``spread``: settings before frames — a second frame of a setting (scene, setting) is drawn only once
    every setting of that label has one. The frames of a setting share its geometry and VPT label, so a
    plain random sample over-weights some settings (in issue 10's blind ratings, 4 of one rater's 5 wrong
    answers were frames of one setting); spread, the sheet checks as many geometries as it can."""
    import pandas as pd

    col, lab = TASK_COLUMNS[task]
    sel = md[md[col].astype(bool) & (md.split == split)]
    parts = []
    for k, y in enumerate((0, 1)):
        g = sel[sel[lab] == y].sample(frac=1.0, random_state=seed + k)
        if spread:
            rank = g.groupby(["scene", "setting"], sort=False).cumcount().to_numpy()
            g = g.iloc[np.argsort(rank, kind="stable")]
        parts.append(g.iloc[:n])
    return pd.concat(parts)


def caption(row, task: str) -> str:
    """Short tile caption: label, VPT reason (vis / occ / out) or depth gap, observer / ball height (px)."""
    if task == "vpt":
        what = f"{int(row.vpt_label)} {str(row.vpt_reason)[:3]}"
    else:
        what = f"{int(row.depth_label)} {row.depth_gap:+.2f}"
    return f"{what} o{int(row.observer_height_px)} b{int(row.ball_height_px)} {str(row.scene)[:10]}"


def blind_order(pick, seed: int = 0):
    """``pick`` in a seeded random order (labels mixed), for a blind rater."""
    return pick.sample(frac=1.0, random_state=seed + 1000)


def answer_key(pick, task: str):
    """The key of a blind sheet: one row per tile (tile, file_name, label, reason, scene)."""
    import pandas as pd

    _, lab = TASK_COLUMNS[task]
    reason = pick.vpt_reason.astype(str) if task == "vpt" else pick.depth_gap.map(lambda g: f"{g:+.2f}")
    return pd.DataFrame({"tile": np.arange(len(pick)), "file_name": pick.file_name.to_numpy(),
                         "label": pick[lab].astype(int).to_numpy(), "reason": reason.to_numpy(),
                         "scene": pick.scene.astype(str).to_numpy()})


def score_answers(key, answers) -> dict:
    """A rater's answers (tile, answer: 0/1, blank or NaN = unsure) against a blind sheet's key: counts of
    right, wrong and unsure per label, and the tiles answered wrongly or left unsure."""
    import pandas as pd

    if not {"tile", "answer"} <= set(answers.columns):
        raise ValueError(f"answers need columns 'tile' and 'answer'; got {list(answers.columns)}")
    m = key.merge(answers[["tile", "answer"]], on="tile", how="left", validate="one_to_one")
    ans = pd.to_numeric(m.answer, errors="coerce")
    blank = m.answer.isna() | (m.answer.astype(str).str.strip() == "")
    # a word ("visible") is not an unsure answer: counting it as one would score a whole sheet as unanswered
    bad = ~blank & ~ans.isin([0, 1])
    if bad.any():
        raise ValueError(f"answers: tile(s) {m.tile[bad].tolist()} have answers other than 0, 1 or blank (e.g. "
                         f"{m.answer[bad].iloc[0]!r}; 1 = the label's positive class, 0 = negative)")
    unsure = ans.isna()
    right = ans == m.label
    wrong = ~unsure & ~right

    def counts(sel):
        return {"right": int(right[sel].sum()), "wrong": int(wrong[sel].sum()), "unsure": int(unsure[sel].sum())}

    return {"n": len(m), **counts(m.label.notna()), **{f"label{y}": counts(m.label == y) for y in (0, 1)},
            "wrong_tiles": m.tile[wrong].tolist(), "unsure_tiles": m.tile[unsure].tolist()}


def contact_sheet(build: Path, task: str, split: str = "test", n: int = 40, seed: int = 0, cols: int = 10,
                  tile: int = 192, blind: bool = False, spread: bool = True):
    """The sheet as a uint8 RGB array [rows·(tile+14), cols·tile, 3]: tiles resized to ``tile`` pixels.
    ``blind``: returns (sheet, answer key) with the tiles shuffled and captioned by index only. ``spread``:
    one frame per setting first (:func:`pick_images`)."""
    from PIL import Image, ImageDraw

    from infra.images import read_image

    build = Path(build)
    md = read_rows(build)
    pick = pick_images(md, task, split, n, seed, spread)
    if not len(pick):
        raise ValueError(f"{build}: no {task} images in split {split!r}")
    if blind:
        pick = blind_order(pick, seed)
    rows = -(-len(pick) // cols)
    sheet = Image.new("RGB", (cols * tile, rows * (tile + 14)), "white")
    draw = ImageDraw.Draw(sheet)
    for i, r in enumerate(pick.itertuples()):
        im = read_image(build / r.file_name).resize((tile, tile), Image.LANCZOS)
        x, y = (i % cols) * tile, (i // cols) * (tile + 14)
        sheet.paste(im, (x, y))
        draw.text((x + 2, y + tile + 1), f"{i}" if blind else f"{i}: {caption(r, task)}", fill="black")
    return (np.asarray(sheet), answer_key(pick, task)) if blind else np.asarray(sheet)


USAGE = ("usage: python -m tasks.threedpc.sheet <build> [task=vpt|depth] [split=test] [n=40] out=<png>  "
         "(--task vpt --out x.png work too)")


@dataclass(frozen=True)
class SheetOptions:
    build: str = field(REQUIRED, "a 3D-PC build folder (metadata.parquet, or images/ of a build still running)")
    task: str = field("vpt", "which label the tiles are grouped by", choices=sorted(TASK_COLUMNS))
    split: str = field("test", "the split to sample from")
    n: int = field(40, "images per label", range=(1, 100000))
    seed: int = field(0, "sample seed", range=(0, 2**32 - 1))
    cols: int = field(10, "tiles per row", range=(1, 1000))
    tile: int = field(192, "tile size (pixels)", range=(16, 4096))
    out: str | None = field(None, "the PNG to write (required unless score=)")
    blind: bool = field(False, "shuffled, captions without labels; answer key in <out>.key.csv")
    score: str | None = field(None, "score a rater's answers CSV (tile, answer) against key= (default <out>.key.csv)")
    key: str | None = field(None, "a blind sheet's key, for score=")
    any_frames: bool = field(False, "sample frames at random (default: one frame per setting before any second)")


def main(argv: list[str] | None = None) -> int:
    return run_options("tasks.threedpc.sheet", USAGE, SheetOptions, _sheet_job, argv, positional=("build",),
                       more=__doc__.split("\n\n", 1)[1])


def _sheet_job(a: SheetOptions) -> str | None:
    from infra.images import save_png

    if a.score is not None:
        return _score_main(a)
    if a.out is None:
        raise ValueError("out= is required (the PNG to write)")
    build, out = Path(a.build), Path(a.out)
    if not (build / "metadata.parquet").is_file() and not (build / "images").is_dir():
        raise ValueError(f"build={a.build}: no metadata.parquet or images/ (not a 3D-PC build folder)")
    img = contact_sheet(build, a.task, a.split, a.n, a.seed, a.cols, a.tile, blind=a.blind,
                        spread=not a.any_frames)
    if a.blind:
        from infra.files import atomic_write_text

        img, key = img
        atomic_write_text(key_path(out), key.to_csv(index=False))
    save_png(out, img)
    return f"wrote {out} ({img.shape[1]}x{img.shape[0]})" + (f" and {key_path(out)}" if a.blind else "")


def key_path(out: Path) -> Path:
    """Where a blind sheet's answer key goes: ``<out>.key.csv``."""
    return out.with_name(out.name + ".key.csv")


def _score_main(a: SheetOptions) -> str:
    import json

    import pandas as pd

    key_file = Path(a.key) if a.key else (key_path(Path(a.out)) if a.out else None)
    if key_file is None or not key_file.is_file():
        raise ValueError(f"score= needs the blind sheet's key (key=, or out= of the sheet); {key_file} not found")
    try:
        res = score_answers(pd.read_csv(key_file), pd.read_csv(a.score))
    except (OSError, ValueError, pd.errors.ParserError) as e:
        raise ValueError(f"score={a.score}: {e}") from None
    return json.dumps(res, indent=1)


if __name__ == "__main__":
    raise SystemExit(main())

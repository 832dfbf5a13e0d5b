"""The counts table of docs/mindset.md stays true: every registered MindSet dataset has a row for its ``paper``
preset, each row's "Vantage images" is the number of items that preset makes, and a row says "equal" exactly when
that number is the original's (issue 32)."""
import re
from pathlib import Path

import pytest

import tasks.stimuli  # noqa: F401  (registers every generator)
from tasks.stimuli import GENERATORS
from tasks.stimuli.mindset import MINDSET
from tasks.stimuli.registry import make_config

DOC = Path(__file__).resolve().parents[1] / "docs" / "mindset.md"


def _slow(name: str) -> bool:
    """Items passes that take many seconds, run with the slow tests: the object-library datasets build every
    object's mesh in theirs (10-25 s for the first one in a process on the shared 2-core machine), same_different
    makes 100,000 items (~30 s)."""
    return GENERATORS[f"mindset/{name}"].module.split(".")[-1].startswith("objects_") or name == "same_different"


def _number(cell: str) -> int:
    m = re.match(r"\s*([\d,]+)", cell)
    assert m, f"docs/mindset.md counts table: {cell!r} does not start with a number"
    return int(m.group(1).replace(",", ""))


def counts_table() -> list[dict]:
    """The rows of docs/mindset.md's counts table: dataset, preset, vantage, original, status."""
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index("<!-- counts table"), text.index("<!-- end counts table -->")
    rows = []
    for line in text[start:end].splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 6, f"docs/mindset.md counts table: row {line!r} has {len(cells)} cells, not 6"
        rows.append({"dataset": cells[0].strip("`"), "preset": cells[1], "vantage": _number(cells[2]),
                     "original": _number(cells[4]), "status": cells[5]})
    return rows


ROWS = counts_table()


def test_every_mindset_dataset_has_its_paper_row_and_status_matches_numbers():
    names = {n.split("/", 1)[1] for n in MINDSET}
    paper = {r["dataset"] for r in ROWS if r["preset"] == "paper"}
    assert paper == names, (f"datasets without a paper row: {sorted(names - paper)}; rows of unknown datasets: "
                            f"{sorted(paper - names)}")
    keys = [(r["dataset"], r["preset"]) for r in ROWS]
    assert len(keys) == len(set(keys)), "a dataset preset listed twice"
    for r in ROWS:
        equal = r["status"].startswith("equal")
        assert equal == (r["vantage"] == r["original"]), (
            f"{r['dataset']} {r['preset']}: status {r['status'][:40]!r} but {r['vantage']} vs the original's "
            f"{r['original']}")
        assert equal or r["status"].startswith("differs"), f"{r['dataset']}: status must start 'equal' or 'differs'"


@pytest.mark.parametrize("row", [pytest.param(r, id=f"{r['dataset']}-{r['preset']}",
                                              marks=[pytest.mark.slow] if _slow(r["dataset"]) else [])
                                 for r in ROWS])
def test_preset_makes_the_tabled_count(row):
    gen = GENERATORS[f"mindset/{row['dataset']}"]
    assert row["preset"] in gen.presets, f"{row['dataset']}: no preset {row['preset']!r}"
    n = sum(1 for _ in gen.items(make_config(gen, {"preset": row["preset"]}), 0))
    assert n == row["vantage"], (f"{row['dataset']} preset={row['preset']} makes {n:,} images; docs/mindset.md says "
                                 f"{row['vantage']:,}: update the table row (and its status) to what the preset makes")

"""The HTML report: built by ``eval stats`` (and ``eval report``) from a results folder in the real schema,
with every figure the results support and plain statements for the rest; then opened in a real headless
Chromium (Debian's, driven by Playwright; no browser download): no console errors, no failed or outside
requests, every image decoded (natural width > 0), tables sortable, a non-blank screenshot."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eval import results as R
from eval.figures import synthetic as S
from eval.html_report import build_report
from eval.report import run_stats

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = Path(os.environ.get("VANTAGE_SCREENSHOTS", tempfile.gettempdir())) / "vantage-report"
STATS = {"split": "test", "aggregation": "model-vs-human", "n_boot": 200, "n_perm": 50, "ci": 0.95, "seed": 0}


def write_results(folder: Path, trials: pd.DataFrame, summary: pd.DataFrame | None = None) -> None:
    """Model trials (and summaries) as result parts, one per run id, as the runner writes them."""
    for rid, g in trials[trials["observer_type"] == "model"].groupby("run_id"):
        R.write_part(folder, "trials", rid, g)
    if summary is not None:
        for rid, g in summary.groupby("run_id"):
            R.write_part(folder, "summary", rid, g)


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    """A results folder with 3D-PC probe + fine-tune runs (6 models), model-vs-human trials (2 models), degraded
    polygons, gratings and MindSet tables; human trials in the trial schema; stats then the report."""
    tmp = tmp_path_factory.mktemp("report")
    res = tmp / "results"
    trials, summary, zoo = S.threedpc_tables(n_models=6, n_test=40, n_human_items=20, n_scenes=4, n_steps=8,
                                             seeds=(0, 1), n_humans=3, finetune_every=2, seed=0)
    write_results(res, trials, summary)
    mvh = S.mvh_trials(n_humans=3, n_images=20)
    write_results(res, pd.concat([mvh, S.polygon_trials(), S.grating_trials()], ignore_index=True))
    humans = pd.concat([trials[trials["observer_type"] == "human"], mvh[mvh["observer_type"] == "human"]])
    humans.to_parquet(tmp / "humans.parquet")
    for kind, table in (("similarity", S.similarity_table()), ("decoder", S.decoder_table())):
        (res / kind).mkdir()
        table.to_parquet(res / kind / "synthetic.parquet")
    zoo_cfg = {"name": "synthetic", "models": [{"id": m, "imagenet_top1": float(t)}
                                               for m, t in zip(zoo["model_id"], zoo["imagenet_top1"])]}
    out = run_stats({"results": str(res), "humans": str(tmp / "humans.parquet"), "humans_format": "trials",
                     "zoo": zoo_cfg, **STATS})
    return out / "report.html"


EXPECTED = ("accuracy_per_model", "3dpc_accuracy_vs_imagenet_probe", "3dpc_accuracy_vs_imagenet_finetune",
            "3dpc_probe_vs_finetune", "3dpc_strategy_steps", "3dpc_error_consistency", "mvh_accuracy_vs_level",
            "mvh_consistency_vs_level", "mvh_shape_bias", "mvh_benchmark_bars", "mvh_benchmark_scatter",
            "polygons_accuracy_vs_degradation", "gratings_accuracy_vs_interval", "mindset_similarity_by_layer",
            "mindset_decoder_predictions")


def test_stats_writes_every_supported_figure(full_report):
    page = full_report.read_text()
    figs = full_report.parent / "figures"
    for stem in EXPECTED:
        assert f"<figure id='{stem}'>" in page, stem
        assert (figs / f"{stem}.png").stat().st_size > 5000 and (figs / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"
    assert page.count("<figure") == len(EXPECTED)
    # self-contained: images are data URIs, nothing refers to the network
    assert not re.search(r"(src|href)=['\"](https?:)?//", page)
    assert page.count("src='data:image/png;base64,") == len(EXPECTED)
    # provenance: models with their weights identity, the configuration and versions
    assert "timm:model_005" in page and "random:seed=0" in page and "matplotlib" in page
    assert "class='sortable'" in page and "No dataset folder given" in page


def test_missing_pieces_are_stated_not_drawn(tmp_path):
    """Only model runs on VPT without a zoo or humans: one figure, and a statement for each missing piece."""
    trials, summary, _ = S.threedpc_tables(n_models=3, n_test=30, n_human_items=10, n_scenes=2, seeds=(0,))
    keep = trials["task"] == "3dpc/vpt"
    write_results(tmp_path / "r", trials[keep], summary[summary["task"] == "3dpc/vpt"])
    page = build_report({"results": str(tmp_path / "r")}).read_text()
    assert page.count("<figure") == 1 and "accuracy_per_model" in page
    for text in ("No human data for these 3D-PC tasks", "Accuracy vs ImageNet top-1 not drawn",
                 "Probe vs fine-tuning not drawn", "No VPT-Strategy results", "No statistics tables yet",
                 "Not in these results: model-vs-human, degraded polygons / abutting gratings, MindSet"):
        assert text in page, text


def test_report_cli_bad_input_exits_2(tmp_path, eval_cli):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = eval_cli("report", f"results={tmp_path / 'nope'}", env=env, cwd=ROOT, timeout=120)
    assert p.returncode == 2 and "error: results=" in p.stderr and "Traceback" not in p.stderr
    (tmp_path / "empty").mkdir()
    p = eval_cli("report", f"results={tmp_path / 'empty'}", env=env, cwd=ROOT, timeout=120)
    assert p.returncode == 2 and "no trials or summaries" in p.stderr


# ------------------------------------------------------------------------------------------ real browser

needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason="Debian chromium not installed (make debs)")


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright (Python package) not installed")
    with playwright_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield b
        b.close()


def open_page(browser, page_path: Path, shot: Path):
    """Load ``page_path`` from disk; returns (page, context, console errors, failed and outside requests)."""
    ctx = browser.new_context(viewport={"width": 1200, "height": 900})
    page = ctx.new_page()
    errors, failed, outside = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    page.goto(page_path.resolve().as_uri(), wait_until="load")
    page.wait_for_function("[...document.images].every(i => i.complete)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=True)
    return page, ctx, errors, failed, outside


def check_screenshot(path: Path, humans: bool = True) -> None:
    from PIL import Image

    img = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32)
    assert img.shape[0] > 900 and img.std() > 20  # not blank: text, tables and plots
    if humans:  # the humans' red is on screen
        assert (np.abs(img - np.array([213, 94, 0])).sum(-1) < 60).mean() > 1e-4


@needs_chromium
def test_report_in_chromium(browser, full_report):
    shot = SHOTS / "report_full.png"
    page, ctx, errors, failed, outside = open_page(browser, full_report, shot)
    try:
        assert errors == [] and failed == [] and outside == []
        widths = page.evaluate("[...document.images].map(i => i.naturalWidth)")
        assert len(widths) == len(EXPECTED) and min(widths) > 0
        # sorting: click the accuracy column of the first table, twice (ascending, then descending)
        table = page.locator("table.sortable").nth(2)
        col = [h.strip() for h in table.locator("th").all_inner_texts()].index("accuracy_mean")
        header = table.locator("th").nth(col)

        def column():
            return [float(r) for r in page.evaluate(
                f"[...document.querySelectorAll('table.sortable')[2].tBodies[0].rows].map(r => r.cells[{col}].textContent)")]

        header.click()
        assert column() == sorted(column())
        header.click()
        assert column() == sorted(column(), reverse=True)
        assert errors == []
    finally:
        ctx.close()
    check_screenshot(shot)


@pytest.mark.slow
@needs_chromium
def test_demo_report_from_real_probe_runs_in_chromium(browser, tmp_path):
    """The demo's path end to end: the small 3D-PC build, probes of a timm test model on VPT and VPT-Strategy,
    ``eval stats task=<build>`` (which writes the report), the gallery link, opened in Chromium."""
    from tasks.gallery import write_gallery
    from tasks.threedpc import build
    from tasks.threedpc.config import compose_config

    task, res = tmp_path / "3dpc", tmp_path / "results"
    build(compose_config(["preset=small", f"out={task}"]), progress=False)
    write_gallery(task)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VANTAGE_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    for target in ("vpt", "vpt_strategy"):
        p = subprocess.run([sys.executable, "-m", "eval", "probe", "model=timm:test_resnet", "pretrained=false",
                            f"task={task}", f"target={target}", f"out={res}", "progress=false", "probe.n_boot=200"],
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
        assert p.returncode == 0, p.stderr[-2000:]
    p = subprocess.run([sys.executable, "-m", "eval", "stats", f"results={res}", f"task={task}", "n_boot=200",
                        "n_perm=50"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    page_path = res / "stats" / "report.html"
    text = page_path.read_text()
    assert "<figure id='accuracy_per_model'>" in text and "<figure id='3dpc_strategy_steps'>" in text
    assert "gallery.html" in text and "manifest_digest" in text
    shot = SHOTS / "report_demo.png"
    page, ctx, errors, failed, outside = open_page(browser, page_path, shot)
    try:
        assert errors == [] and failed == [] and outside == []
        assert min(page.evaluate("[...document.images].map(i => i.naturalWidth)")) > 0
        href = page.get_attribute("a[href$='gallery.html']", "href")
        assert (page_path.parent / href).resolve() == (task / "gallery.html").resolve()
    finally:
        ctx.close()
    check_screenshot(shot, humans=False)


def test_mindset_tables_from_the_methods_columns_feed_the_figures():
    """The report reads what eval similarity / eval decoder write (their own column names) and the figure
    summaries accept the mapped tables; a classification decoder's class-name predictions are left out."""
    from eval.figures import data as D
    from eval.html_report import mindset_figure_tables

    sim = pd.DataFrame({"model_id": "timm:m", "layer": ["a", "a", "b", "b"], "layer_index": [0, 0, 1, 1],
                        "depth": [0.0, 0.0, 1.0, 1.0], "comparison_level": ["near", "far", "near", "far"],
                        "reference_level": "ref", "set": ["s0", "s0", "s0", "s0"], "repetition": 0,
                        "distance": [0.1, 0.5, 0.2, 0.6]})
    dec = pd.DataFrame({"model_id": "timm:m", "feature": ["pooled"] * 3, "condition": ["x", "x", "y"],
                        "target": "length", "target_value": ["1.0", "2.0", "3.0"], "prediction": ["1.5", "2.5", "2.0"],
                        "correct": pd.array([pd.NA, pd.NA, pd.NA], dtype="boolean")})
    cls = dec.assign(prediction="big", correct=pd.array([True, False, True], dtype="boolean"))
    out = mindset_figure_tables({"similarity": sim, "decoder": pd.concat([dec, cls], ignore_index=True)})
    summ = D.similarity_summary(out["similarity"])
    assert set(summ["condition"]) == {"near", "far"} and len(out["decoder"]) == 3
    bias = D.decoder_bias(out["decoder"])
    assert np.isclose(bias.loc[bias["condition"] == "y", "bias"].iloc[0], -1.0)
    assert np.isclose(bias.loc[bias["condition"] == "x", "bias"].iloc[0], 0.5)


# ------------------------------------------------------------------------------------------ issue 34


def test_one_split_per_report_after_stats_on_the_human_split(tmp_path):
    """``eval stats split=human`` then ``eval report`` (the README's order) drew test-split model accuracies
    against the human split's noise floor and band, the header saying one split and the table another. Now
    the report takes the statistics' split, and a different one is refused."""
    trials, summary, _ = S.threedpc_tables(n_models=3, n_test=30, n_human_items=12, n_scenes=2, seeds=(0,),
                                           n_humans=2)
    res = tmp_path / "r"
    keep = trials["task"] == "3dpc/vpt"
    write_results(res, trials[keep], summary[summary["task"] == "3dpc/vpt"])
    trials[keep & (trials["observer_type"] == "human")].to_parquet(tmp_path / "humans.parquet")
    run_stats({"results": str(res), "humans": str(tmp_path / "humans.parquet"), "humans_format": "trials",
               **{**STATS, "split": "human"}})
    page = build_report({"results": str(res)}).read_text()  # no split given: the statistics' split
    assert "split <code>human</code>" in page and "split human;" in page  # header and the figure's caption
    start = page.index("<h3>Accuracy across seeds</h3>")
    seeds = page[start:page.index("<h3>", start + 5)]
    assert seeds.count("<td>human</td>") == 3 and "<td>test</td>" not in seeds  # 3 models, the human split only
    assert "split test" not in page and "<td>test</td>" not in page
    with pytest.raises(ValueError, match="computed on split=human.*one split per report"):
        build_report({"results": str(res), "split": "test"})
    assert build_report({"results": str(res), "split": "human"}).is_file()


@pytest.fixture(scope="module")
def mindset_results(tmp_path_factory):
    """Real MindSet method outputs: similarity judgments and a regression decoder (no trial rows at all) in
    one results folder, a two-class decoder (trials with conditions plain/moved) in another."""
    from eval.decoders import DecoderConfig, decoder_features, load_decoder_data, run_decoders
    from eval.similarity import SimilarityConfig, run_similarity
    from eval.zoo import load_model
    from test_eval_decoders import disc_dataset
    from test_eval_similarity import grey_sets

    tmp = tmp_path_factory.mktemp("mindset")
    grey_sets(tmp / "greys", n_sets=6)
    disc_dataset(tmp / "discs", n_sets=40)
    small = load_model("module:eval.examples:small_cnn", taps=("features.2",))
    run_similarity(small, tmp / "greys", "module:eval.examples:small_cnn",
                   SimilarityConfig(reference="base", n_boot=200, n_perm=200), tmp / "only")
    for target, task_type, out in ((("radius",), "regression", "only"), (("size",), "classification", "two")):
        cfg = DecoderConfig(targets=target, task_type=task_type, epochs=5, n_boot=200, seeds=(0,))
        data = load_decoder_data(tmp / "discs", cfg)
        X, key = decoder_features(small, data, cfg, tmp / "cache", progress=False)
        run_decoders(data, X, key, "module:eval.examples:small_cnn", cfg, tmp / out, small.run_identity())
    return tmp


def test_stats_and_report_on_mindset_only_results(mindset_results):
    """A folder holding only similarity and regression-decoder results was refused ("no trials"), so those
    MindSet figures could never be drawn."""
    res = mindset_results / "only"
    assert not (res / "trials").exists() and (res / "similarity").is_dir() and (res / "decoder").is_dir()
    out = run_stats({"results": str(res), **STATS})
    page = (out / "report.html").read_text()
    for stem in ("mindset_similarity_by_layer", "mindset_decoder_predictions"):
        assert f"<figure id='{stem}'>" in page and (out / "figures" / f"{stem}.png").stat().st_size > 5000
    md = (out / "report.md").read_text()
    assert "Similarity judgment: mean distance" in md and "Decoders: accuracy or RMSE" in md and "rmse" in md
    assert (out / "similarity_summary.csv").is_file() and (out / "decoder_summary.csv").is_file()
    assert build_report({"results": str(res)}).read_text().count("<figure") == 2  # eval report alone too


def test_two_class_decoder_is_drawn_against_its_own_chance_line(mindset_results):
    from eval.figures import mvh as M
    from eval.figures.data import level_accuracy, task_chance
    from eval.html_report import read_trials

    res = mindset_results / "two"
    trials, summary = read_trials(res), R.read_results(res, "summary")
    assert set(trials["condition"]) == {"plain", "moved"} and set(summary["chance"]) == {0.5}
    acc = level_accuracy(trials, task_chance(trials, summary))
    fig = M.accuracy_vs_level(acc)
    lines = [ln for ax in fig.axes for ln in ax.get_lines() if ln.get_gid() == "chance"]
    assert lines and all(np.allclose(ln.get_ydata(), 0.5) for ln in lines)  # was 1/16
    # 16-class model-vs-human trials keep 1/16; a 3-class task without summaries gets 1/3
    mvh = S.mvh_trials(n_humans=2, n_images=8)
    assert task_chance(mvh)["contrast"] == pytest.approx(1 / 16)
    poly = S.polygon_trials()
    assert task_chance(poly)["degraded_polygons/shape_class"] == pytest.approx(1 / 3)
    page = run_stats({"results": str(res), **STATS}).joinpath("report.html").read_text()
    assert "<figure id='mvh_accuracy_vs_level'>" in page and "chance (1 / the number of classes)" in page


def test_stats_and_report_with_a_generated_dataset_as_task(tmp_path):
    """task=<a generated 2D dataset> crashed: its manifest was read as a 3D-PC build's."""
    from tasks.stimuli import write_dataset

    ds = write_dataset("degraded_polygons", tmp_path / "poly", {"per_class": 1, "levels": [0.3],
                                                                "classes": ["triangle", "square"]}, progress=False)
    ann = pd.read_parquet(ds / "annotations.parquet")
    trials = S._trials("timm:model_a", "model", "degraded_polygons/shape_class", "test", list(ann["file_name"]),
                       list(ann["shape_class"]), np.arange(len(ann)) % 2 == 0,
                       responses=np.where(np.arange(len(ann)) % 2 == 0, ann["shape_class"], "square"))
    write_results(tmp_path / "r", R.conform(trials, "trials"))
    out = run_stats({"results": str(tmp_path / "r"), "task": str(ds), **STATS})
    page = (out / "report.html").read_text()
    assert "generated 2D dataset" in page and "degraded_polygons" in page
    assert "<figure id='polygons_accuracy_vs_degradation'>" in page  # conditions joined from the annotations
    assert build_report({"results": str(tmp_path / "r"), "task": str(ds)}).is_file()

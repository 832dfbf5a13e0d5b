"""Every command form the README prints works (issue 34, item 10).

The README's ```bash blocks are parsed (:func:`readme_commands`): every ``python -m`` command (also inside
``sbatch --wrap "..."``), and every option form in the comments that go with it (``key=value`` tokens; the
alternatives of ``a|b|c`` each). Each command runs in-process, as ``python -m`` runs it (:mod:`runpy`), in a
folder holding what the README's paths name (``out/demo_3dpc`` a small 3D-PC build, ``out/polygons`` a
generated dataset, ``path/to/point_cloud.ply``, ``models/sd2-base`` a tiny Stable-Diffusion-shaped model ...),
through composition and every check up to the point where the real work starts; there a stub records what
the command would have done (:data:`STOPS`: the 3D-PC build, the frames' output folder, model weights, the
VLM requests, the web server, ...). Cheap real work runs as it is (``scenes.export``, ``render.gallery`` on
small stand-in scenes, ``tasks.gallery``, the contact sheet, ``experiment export``, ``eval zoo``).

What cannot run here as written is substituted, in :data:`SUBSTITUTE` (absolute example paths, the Slurm
array index, ``device=cuda``) and :data:`FORM_ARGS` (placeholders such as ``<folder>`` or ``...``, and the
task an option form is meant for); a README form with a placeholder that neither table knows fails
:func:`test_readme_forms_are_all_known`, as does a table entry the README no longer prints. ``--multirun``
commands are expanded into their jobs with Hydra's override parser; their launcher config is composed.
"""
from __future__ import annotations

import dataclasses
import importlib
import itertools
import re
import runpy
import shlex
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# --------------------------------------------------------------------------------------------- the README
# a key=value form in prose: lower-case dotted key (optionally +key), value up to a space, comma, ; or )
FORM = re.compile(r"""(?<![\w./?&=:-])(\+?[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*="""
                  r"""(?:'[^']*'|\{[^}]*\}|\[[^\]]*\]|<[^>]*>|[^\s,;()"]+))""")


def _python_commands(line: str) -> list[str]:
    """``python -m`` commands in one shell line (shlex: quotes, comments), also inside a quoted argument."""
    try:
        toks = shlex.split(line, comments=True)
    except ValueError:
        return []
    out = []
    for i, t in enumerate(toks):
        if "python -m " in t:
            out += _python_commands(t)
        elif t.endswith("python") and toks[i + 1:i + 2] == ["-m"]:
            out.append(shlex.join(toks[i + 2:]))  # quoted again where needed: shlex.split gives the argv back
    return out


def _alternatives(form: str) -> list[str]:
    key, _, value = form.partition("=")
    if "|" in value and not value.startswith(("{", "[", "'", "<")):
        return [f"{key}={v}" for v in value.split("|")]
    return [form]


def readme_commands(text: str | None = None) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """(``python -m`` commands as ``"<module> <args>"``, (command, option form) pairs, other command lines).

    A comment line indented past ``#`` (``#   options: ...``) belongs to the command above it; any other
    comment (a heading) to the command below it; a comment after a command on its line to that command."""
    text = README.read_text() if text is None else text
    cmds, forms, other = [], [], []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        last, pending = None, []
        for line in block.replace("\\\n", " ").splitlines():
            s = line.strip()
            if not s or s.startswith(("#!", "#SBATCH")):
                continue
            if s.startswith("#"):
                body = s.lstrip("#")
                found = [a for m in FORM.finditer(body) for a in _alternatives(m.group(1))]
                if body.startswith("   ") and last is not None:
                    forms += [(last, f) for f in found]
                else:
                    pending += found
                continue
            found_cmds = _python_commands(line)
            if not found_cmds:
                other.append(s)
            trailing = line.split(" #", 1)[1] if " #" in line else ""
            for c in found_cmds:
                cmds.append(c)
                forms += [(c, f) for f in pending]
                forms += [(c, a) for m in FORM.finditer(trailing) for a in _alternatives(m.group(1))]
                pending, last = [], c
    return cmds, forms, other


# ----------------------------------------------------------------------------------- what stands in for what
# Shell lines of the README that are not python commands, and why they are not run here.
NOT_PYTHON = {
    "make demo": "the Makefile target itself (3.5 minutes; runs the python commands above)",
    "make test": "the Makefile target that runs this test suite",
    "cat > build.sbatch <<'SH'": "writes a Slurm script (its python command is tested)",
    "SH": "end of that script",
    "jid=$(sbatch --parsable build.sbatch)": "Slurm submission (needs a cluster)",
}  # (the sbatch --wrap "..." lines hold python commands: those are run)
# Text replaced in every command: what cannot exist here as written.
SUBSTITUTE = [
    ("/models/", "models/"),  # a model folder under / -> the working folder's
    ("/shared/", "shared/"),  # a cluster's shared file system -> the working folder
    ("${SLURM_ARRAY_TASK_ID}", "0"),  # the Slurm array index of one job
    ("device=cuda", "device=cpu"),  # no GPU here
    ("humans=<model-vs-human raw-data folder>", "humans=mvh_raw"),
]
VLM_REST = "task=out/demo_3dpc target=vpt out=out/results"  # the '...' of the VLM lines: the first one's
# Option forms: the arguments they are run with (placeholders filled; the task a form is meant for).
AB = ["task=out/ab", "target=null"]  # "other tasks": an ImageFolder with classes a and b
SIX = ["task=out/six", "target=null", "diffusion.template='a photo of a {class}'", "diffusion.keep=[5,1]",
       "diffusion.samples=[50,500]"]  # "adaptive rounds" are for many classes (keep 5 needs more than 5)
FORM_ARGS = {
    "source=<folder>": ["source=src_images"],
    "humans=[<human trials folder>,<model trials folder>]": ["humans=[mvh_raw,mvh_models]"],
    "weights=<checkpoint file>": ["pretrained=false", "weights=checkpoint.pth"],
    "feature=layer3": ["taps=[layer3]", "feature=layer3"],
    "diffusion.template='a photo of a {class}'": [*AB, "diffusion.template='a photo of a {class}'"],
    "diffusion.prompts={a: ..., b: ...}": [*AB, "diffusion.prompts={a: a red disc, b: a blue square}"],
    "diffusion.keep=[5,1]": SIX,
    "diffusion.samples=[50,500]": SIX,
    "requests.price_in_per_mtok=...": ["requests.price_in_per_mtok=2.5"],
    "requests.price_out_per_mtok=...": ["requests.price_out_per_mtok=10"],
}
# Forms checked by their own test (they need a service that is not here).
OWN_TEST = {"db=postgresql://user@host/db": "test_postgresql_url_form"}
# The "model ids:" line: one runnable id per form it prints.
MODEL_IDS = {"timm:<name>": "timm:resnet18", "open_clip:<arch>/<tag>": "open_clip:ViT-B-32/laion2b_s34b_b79k",
             "module:<python.path>:<factory>": "module:eval.examples:small_cnn"}


def _substituted(text: str) -> str:
    """The README text with :data:`SUBSTITUTE` applied (before parsing: a placeholder may hold spaces)."""
    for old, new in SUBSTITUTE:
        text = text.replace(old, new)
    return text


def _argv(cmd: str) -> list[str]:
    argv = shlex.split(cmd)
    return argv[:-1] + shlex.split(VLM_REST) if argv[-1] == "..." else argv


def _with(args: list[str], extra: list[str]) -> list[str]:
    """``args`` with ``extra`` appended, each replacing an argument of the same key."""
    keys = {e.split("=", 1)[0].lstrip("+") for e in extra}
    return [a for a in args if a.split("=", 1)[0].lstrip("+") not in keys] + extra


def _needs_args(form: str) -> bool:
    return "<" in form or "..." in form


# ----------------------------------------------------------------------------------------- the stops
class Reached(SystemExit):
    """Raised where a command's real work would start (exit status 0): everything before has run."""

    def __init__(self, what: str, value=None):
        super().__init__(0)
        self.what, self.value = what, value


@dataclasses.dataclass
class Log:
    events: list = dataclasses.field(default_factory=list)

    def add(self, what, value=None):
        self.events.append((what, value))


def _stub_scene(ply: Path):
    """Catalogue names resolve to a small stand-in scene (the real catalogue builds take seconds each)."""
    from scenes.catalogue import parse_name
    from scenes.load import load_scene

    base = load_scene(str(ply))

    def build(name, seed=0):
        parse_name(str(name))  # unknown names still fail as in the real catalogue
        return dataclasses.replace(base, name=str(name))

    return build


# modules that bind a stubbed name at import time (``from .runner import run_method``): imported before the
# stubs go in, so that the binding is the real function (a module first imported under the stubs would keep the
# stub for the rest of the test process: eval.probe once did, and a later file's probe runs stopped at it)
BIND_AT_IMPORT = ("eval.probe", "eval.finetune", "eval.ood", "eval.results_3dpc")
PROJECT = ("eval", "tasks", "render", "scenes", "infra", "experiment")
STUBS: list = []  # the stub functions now installed (run_cli checks that none stays bound after a command)


def _ours(module) -> bool:
    return str(getattr(module, "__name__", "")).split(".")[0] in PROJECT


def install_stops(monkeypatch, log: Log, work: Path) -> None:
    """The stubs (module docstring). Each records what it was given. A stubbed function is replaced on its
    module and wherever a loaded project module holds it under the same name (``from X import name``)."""
    for name in BIND_AT_IMPORT:
        importlib.import_module(name)
    import eval.diffusion  # noqa: F401  (patched below: imported so that the attribute exists)
    import eval.html_report
    import eval.report
    import eval.runner
    import eval.zoo
    import scenes.catalogue
    import scenes.load
    import tasks.placement
    import tasks.stimuli.gratings
    import tasks.stimuli.writer
    import tasks.trajectory
    import uvicorn

    build_module = importlib.import_module("tasks.threedpc.build")  # (the package exports a function 'build')
    shard_module = importlib.import_module("tasks.threedpc.shard")

    def build_3dpc(cfg, progress=True):
        log.add("3dpc build", cfg)
        return Path(cfg.out)

    def shard_run(cfg, shard, progress=True):
        log.add("3dpc shard", (cfg, shard))
        return f"(stub) shard {shard}"

    def output_folder(out, kind, config, **kw):  # trajectory and generate: validated, about to write
        raise Reached(kind, config)

    real_placement = tasks.placement.placement_from_config

    def placement_from_config(scene, props):
        if props.get("mode") == "explicit":
            real_placement(scene, props)  # positions, angles and style checked on the stand-in scene
        raise Reached("props", props)  # sampling a placement and labelling it is the real work

    def load_model(model, weights=None, *a, **k):
        raise Reached("model", (eval.zoo.ModelId.parse(model), weights))

    def run_method(method, model_id, results_dir, **k):
        raise Reached(f"run {type(method).__name__}", method)

    def silhouettes(size=224, views=8):
        return np.ones((2, size, size)), ["car", "chair"]

    stand_in = _stub_scene(work / "path" / "to" / "point_cloud.ply")
    stubs = []
    for obj, name, fn in (
            (build_module, "build", build_3dpc), (shard_module, "run", shard_run),
            (tasks.trajectory, "output_folder", output_folder), (tasks.stimuli.writer, "output_folder", output_folder),
            # a merge checks the jobs' outputs, which the stopped job commands did not write
            (tasks.stimuli.writer, "_check_jobs", lambda out, n, *a, **k: log.add("merge check", (out, n))),
            (tasks.placement, "placement_from_config", placement_from_config),
            (scenes.load, "build", stand_in), (scenes.catalogue, "build", stand_in),
            (tasks.stimuli.gratings, "catalogue_silhouettes", silhouettes),
            (eval.zoo, "load_model", load_model), (eval.runner, "run_method", run_method),
            (eval.report, "run_stats", lambda c: log.add("stats", c) or Path(c["results"]) / "stats"),
            (eval.html_report, "build_report", lambda c: log.add("report", c) or "report.html"),
            (uvicorn, "run", lambda app, **kw: (_ for _ in ()).throw(Reached("serve", app)))):
        original = getattr(obj, name)
        monkeypatch.setattr(obj, name, fn)
        for mod in list(sys.modules.values()):
            if mod is not obj and _ours(mod) and getattr(mod, name, None) is original:
                monkeypatch.setattr(mod, name, fn)
        stubs.append(fn)
    monkeypatch.setattr(sys.modules[__name__], "STUBS", stubs)  # back to [] when the test ends


def run_cli(module: str, args: list[str], work: Path, monkeypatch) -> str:
    """Run ``python -m <module> <args>`` in-process in ``work``; returns what stopped it ('finished' or the
    stop's name). A non-zero exit fails the test."""
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "argv", [module, *args])
    loaded = set(sys.modules)
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except Reached as r:
        return r.what
    except SystemExit as e:
        if e.code not in (0, None):
            raise AssertionError(f"python -m {module} {' '.join(args)}: exit status {e.code}") from None
    finally:
        GlobalHydra.instance().clear()
        _no_stub_kept(set(sys.modules) - loaded)
    return "finished"


def _no_stub_kept(new_modules) -> None:
    """A project module first imported during a stubbed command must not hold a stub under any name: the
    monkeypatch undo would not reach it, and later tests in this process would run the stub."""
    kept = sorted(f"{m}.{k}" for m in new_modules if _ours(sys.modules.get(m))
                  for k, v in vars(sys.modules[m]).items() if any(v is f for f in STUBS))
    assert not kept, (f"{kept}: imported under the README stubs, they bound a stub; add their modules to "
                      "BIND_AT_IMPORT (tests/test_readme_commands.py)")


# -------------------------------------------------------------------------------------------- the folder
def _threedpc_build(root: Path, n: int = 48) -> None:
    """A small 3D-PC build (metadata.parquet, manifest.json, PNGs): train/val/test and a human subset, every
    label cell filled, strategy rows, the columns the contact sheet captions use."""
    from infra.images import save_png

    rng = np.random.default_rng(0)
    (root / "images").mkdir(parents=True)
    rows = []
    for i in range(n):
        split = ("train", "train", "val", "test")[i % 4]
        f = f"images/{i:03d}.png"
        save_png(root / f, rng.integers(0, 255, (32, 32, 3), dtype=np.uint8))
        rows.append(dict(file_name=f, split=split, vpt_label=i % 2, depth_label=(i // 2) % 2, in_vpt=True,
                         in_depth=True, in_human=split == "test", in_strategy=split == "test" and i % 3 == 0,
                         scene=f"s{i // 8}", setting=i % 8, frame=0, vpt_reason=("occluded", "visible")[i % 2],
                         depth_gap=0.3, observer_height_px=20, ball_height_px=12, keep=True))
    pd.DataFrame(rows).to_parquet(root / "metadata.parquet")
    (root / "manifest.json").write_text('{"stub": "a test build"}')


def _image_folder(root: Path, classes, splits=("train", "val", "test"), per=2) -> None:
    from PIL import Image

    for s in splits:
        for k, c in enumerate(classes):
            (root / s / c).mkdir(parents=True)
            for i in range(per):
                Image.new("RGB", (16, 16), (40 * k % 255, 20 * i, 90)).save(root / s / c / f"{i}.png")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The folder the commands run in, holding what their paths name."""
    from eval.diffusion_tiny import build_tiny
    from scenes.gaussians import GaussianScene
    from scenes.ply import write_ply
    from scenes.trajectory import cameras_table
    from tasks.stimuli import write_dataset

    w = tmp_path_factory.mktemp("readme")
    for b in ("out/demo_3dpc", "out/3dpc"):
        _threedpc_build(w / b)
    # its shortcut audit as a build writes it (the results page's no-network baselines read it)
    pd.DataFrame([{"task": t, "kind": k, "name": n, "value": v, "ci_low": v - 0.05, "ci_high": v + 0.05}
                  for t, k, n, v in (("depth", "pixel_logreg", "pixels", 0.7), ("depth", "rule", "rule", 0.7),
                                     ("vpt", "pixel_logreg", "pixels", 0.5), ("vpt", "rule", "rule", 0.5))]
                 ).to_parquet(w / "out" / "3dpc" / "shortcut_audit.parquet")
    _image_folder(w / "out" / "ab", ["a", "b"], splits=("test",))
    _image_folder(w / "out" / "six", [f"c{i}" for i in range(6)], splits=("test",), per=1)
    _image_folder(w / "src_images", ["cats", "dogs"], splits=("",), per=1)
    # the stand-in scene file: a box on a ground plane, opaque and dense (what a trained scene looks like to the
    # loader's floater and ground detection: connected at its 128-voxel grid), 38k Gaussians
    rng = np.random.default_rng(0)
    means = np.concatenate([np.c_[rng.uniform(-1, 1, (30000, 2)), np.zeros(30000)],
                            rng.uniform([-0.2, -0.2, 0.0], [0.2, 0.2, 0.4], (8000, 3))])
    n = len(means)
    (w / "path" / "to").mkdir(parents=True)
    write_ply(GaussianScene(means=means, quats=np.tile([1.0, 0, 0, 0], (n, 1)), log_scales=np.full((n, 3), -4.0),
                            opacity_logits=np.full(n, 4.0), sh=rng.uniform(0, 1, (n, 1, 3)), source="readme test"),
              w / "path" / "to" / "point_cloud.ply")
    from scenes.formats import read_scene_file, write_scene_file
    from scenes.load import load_scene

    # "Your own trained scene": the same stand-in in the formats its commands name
    stand_in = read_scene_file(w / "path" / "to" / "point_cloud.ply")
    (w / "captures").mkdir()
    for f in ("captures/statue.sog", "a.sog", "b.splat", "c.ply"):
        write_scene_file(stand_in, w / f)
    sc = load_scene(str(w / "path" / "to" / "point_cloud.ply"))
    cams = sc.trajectory.cameras(2, 32, 32)
    (w / "out" / "bench_01").mkdir(parents=True)
    cameras_table(cams, ["frame_0000.png", "frame_0001.png"]).to_csv(w / "out" / "bench_01" / "cameras.csv", index=False)
    write_dataset("degraded_polygons", w / "out" / "polygons", {"per_class": 1, "levels": [0.3],
                                                                 "classes": ["triangle", "square"]}, progress=False)
    build_tiny(w / "models" / "sd2-base", steps=0)
    (w / "models" / "llava").mkdir()  # a local transformers model folder (the client is made on the first request)
    (w / "checkpoint.pth").write_bytes(b"")  # weights=<file>: checked to exist; loading is the stopped work
    (w / "mvh_raw").mkdir()
    (w / "mvh_models").mkdir()
    for spec in ("a.yaml", "b.yaml", "c.yaml"):  # CO3D scene specs: the build checks they exist (the build reads them)
        (w / spec).write_text("splat: point_cloud.ply\nco3d_root: co3d\ncategory: hydrant\nsequence: '1'\n")
    pd.DataFrame({"observer": ["h1"], "item_id": ["images/003.png"], "response": ["1"]}).to_csv(w / "responses.csv")
    return w


@pytest.fixture
def stops(monkeypatch, work):
    log = Log()
    install_stops(monkeypatch, log, work)
    for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(k, "sk-readme-test")  # the README's KEY=... (no request is sent)
    monkeypatch.setenv("VANTAGE_CACHE", str(work / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return log


def _plan() -> list[tuple[str, str, list[str]]]:
    """(test id, README command, argument list to run): each command, then each of its option forms."""
    cmds, forms, _ = readme_commands(_substituted(README.read_text()))
    out = []
    for i, c in enumerate(cmds):
        out.append((f"{i:02d} {c[:70]}", c, _argv(c)))
    for j, (c, f) in enumerate(forms):
        if f in OWN_TEST:
            continue
        module, *args = _argv(c)
        out.append((f"form {j:02d} {f}", c, [module, *_with(args, FORM_ARGS.get(f, [f]))]))
    cmd = next(c for c in cmds if c.startswith("eval probe model="))
    for form, mid in MODEL_IDS.items():
        module, *args = _argv(cmd)
        out.append((f"model id {form}", cmd, [module, *_with(args, [f"model={mid}"])]))
    return out


PLAN = _plan()


# ----------------------------------------------------------------------------------------------- the tests
def test_readme_forms_are_all_known():
    """The tables above are tied to the README: every shell line is a python command or in NOT_PYTHON, every
    placeholder form has its arguments, every table entry is still printed, the "model ids" forms are all
    covered, and the parser finds the commands it must (a broken parser would test nothing)."""
    text = README.read_text()
    cmds, forms, other = readme_commands(text)
    assert len(cmds) >= 40 and any(c.startswith("eval diffusion") for c in cmds)
    assert any("--wrap" not in c and c.startswith("tasks.generate") and "merge/8" in c for c in cmds)
    assert sorted(set(other)) == sorted(o for o in set(other) if any(o.startswith(k) for k in NOT_PYTHON)), \
        f"shell lines neither python commands nor in NOT_PYTHON: {[o for o in other if not any(o.startswith(k) for k in NOT_PYTHON)]}"
    assert all(any(o.startswith(k) for o in other) for k in NOT_PYTHON), "NOT_PYTHON lists a line the README lost"
    printed = {f for _, f in forms}
    unknown = sorted(f for f in printed if _needs_args(f) and f not in FORM_ARGS and f not in OWN_TEST)
    assert not unknown, f"README option forms with placeholders: add their arguments to FORM_ARGS: {unknown}"
    stale = sorted(set(FORM_ARGS) - printed) + sorted(set(OWN_TEST) - printed)
    assert not stale, f"FORM_ARGS/OWN_TEST entries the README no longer prints: {stale}"
    assert {"diffusion.prompts={a: ..., b: ...}", "vlm.shots=0", "target=vpt_strategy",
            "props.style.target_color=[0,0,1]"} <= printed
    for old, _ in SUBSTITUTE:
        assert any(old in c for c in cmds) or any(old in " ".join(c.split()) for c in cmds) or old in text, \
            f"SUBSTITUTE entry {old!r} matches no README command"
    assert any(shlex.split(c)[-1] == "..." for c in cmds), "VLM_REST: no README command ends in '...'"
    line = next(ln for ln in text.splitlines() if "model ids:" in ln)
    assert sorted(re.findall(r"\w+:<[^|)]*>(?:/<\w+>|:<\w+>)?", line)) == sorted(MODEL_IDS), line


@pytest.mark.parametrize("plan", PLAN, ids=[p[0] for p in PLAN])
def test_readme_command_runs(plan, work, stops, monkeypatch, capsys):
    tid, readme_cmd, (module, *args) = plan
    if "--multirun" in args:
        _run_multirun(module, args, work, monkeypatch)
        return
    n_events = len(stops.events)
    what = run_cli(module, args, work, monkeypatch)
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "error:" not in out.err, out.err[-2000:]
    want, made = _expected(module, args)
    got = stops.events[-1][0] if what == "finished" and len(stops.events) > n_events else what
    assert got == want, f"{readme_cmd}: stopped at {got!r}, expected {want!r}"
    if made:
        assert (work / made).exists(), f"{readme_cmd}: {made} not written"


def _expected(module: str, args: list[str]) -> tuple[str, str | None]:
    """Where a command should stop (a stub's name, or 'finished'), and the file a finished one writes."""
    kv = dict(a.split("=", 1) for a in args if "=" in a and not a.startswith("-"))
    if module == "tasks.threedpc":
        return ("3dpc shard" if "shard" in kv or "+shard" in kv else "3dpc build"), None
    if module == "render.trajectory":
        return ("props" if kv.get("props", "none") != "none" else "render.trajectory"), None
    if module == "tasks.generate":
        if "--list" in args:
            return "finished", None
        return ("tasks.generate.job" if kv.get("shard", "merge").split("/")[0].isdigit() else "tasks.generate"), None
    if module == "eval":
        return {"probe": "model", "finetune": "model", "diffusion": "run DiffusionMethod", "vlm": "run VLMMethod",
                "stats": "stats", "report": "report", "zoo": "finished"}[args[0]], None
    if module == "eval.results_3dpc":  # run: its first probe loads a model (stubbed); page: from that folder
        return ("model" if args[0] == "run" else "finished"), None
    if module == "experiment":
        return ("serve", None) if args[0] == "serve" else ("finished", "out/results/humans")  # (no participants yet)
    files = {"scenes.export": kv.get("out"), "render.gallery": args[0] if args else None,
             "tasks.gallery": f"{args[0]}/gallery.html" if args else None,
             "tasks.threedpc.sheet": args[args.index("--out") + 1] if "--out" in args else None}
    return "finished", files.get(module)


def _launcher_composes(config_name: str, args: list[str], launcher: str) -> None:
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module="configs", version_base=None):
            cfg = compose(config_name=config_name, overrides=[*args, launcher], return_hydra_config=True)
        assert "Launcher" in cfg.hydra.launcher._target_, cfg.hydra.launcher
    finally:
        GlobalHydra.instance().clear()


def _jobs(args: list[str]) -> list[list[str]]:
    """The jobs of a sweep, as Hydra's basic sweeper makes them (one job per combination of values)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    per = []
    for o in OverridesParser.create().parse_overrides(args):
        per.append([f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()] if o.is_sweep_override()
                   else [o.input_line])
    return [list(c) for c in itertools.product(*per)]


def _run_multirun(module: str, args: list[str], work: Path, monkeypatch) -> None:
    args = [a for a in args if a != "--multirun"]
    launcher = next(a for a in args if a.startswith("hydra/launcher="))
    args = [a for a in args if a != launcher]
    if module == "eval":
        from eval.cli import COMMANDS, expand_zoo, load_commands, register_settings

        name, *args = args
        load_commands()
        register_settings(COMMANDS[name])
        args = [a for a in expand_zoo(["--multirun", *args]) if a != "--multirun"]
        config, prefix = f"eval_{name}", [name]
    else:
        from tasks.threedpc.config import register_configs

        register_configs()
        config, prefix = "threedpc", []
    jobs = _jobs(args)
    assert len(jobs) >= 2, jobs
    _launcher_composes(config, jobs[0], launcher)
    if module == "eval":  # a zoo sweep: every job's model id parses; the first and last run through their checks
        from eval.zoo import ModelId

        from hydra.core.override_parser.overrides_parser import OverridesParser

        parser = OverridesParser.create()
        for job in jobs:
            ModelId.parse(parser.parse_override(next(a for a in job if a.startswith("model="))).value())
        jobs = [jobs[0], jobs[-1]]
    for job in jobs:
        run_cli(module, [*prefix, *job], work, monkeypatch)


def test_postgresql_url_form():
    """``db=postgresql://user@host/db`` (the README's form for real studies): accepted by the serve config and
    by the engine factory, whose driver (psycopg 3) is installed; connecting needs a server, not run here."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from experiment.db import make_engine

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module="configs.experiment", version_base=None):
            cfg = compose(config_name="serve", overrides=["task=out/demo_3dpc", "db=postgresql://user@host/db"])
    finally:
        GlobalHydra.instance().clear()
    engine = make_engine(cfg.db)
    assert engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"
    engine.dispose()


def test_mapping_settings_compose_from_the_command_line():
    """``diffusion.prompts={a: ..., b: ...}`` and ``vlm.answers={...}`` ended in ``'NoneType' object has no
    attribute 'get'`` inside Hydra's composition (tasks/schema.py: ``_loose_mappings``)."""
    from eval.cli import COMMANDS, load_commands, register_settings
    from eval.diffusion import DiffusionConfig, DiffusionError
    from eval.vlm import VLMConfig
    from infra.cli import compose

    def compose_eval(name: str, overrides: list[str]) -> dict:
        load_commands()
        register_settings(COMMANDS[name])
        return compose(f"eval_{name}", overrides)

    c = compose_eval("diffusion", ["model=diffusion:m", "task=t", "out=o", "diffusion.prompts={a: a cat, b: a dog}"])
    assert DiffusionConfig(**c["diffusion"]).prompts == {"a": "a cat", "b": "a dog"}
    assert compose_eval("diffusion", ["model=diffusion:m", "task=t", "out=o"])["diffusion"]["prompts"] is None
    c = compose_eval("vlm", ["model=openai:m", "task=t", "out=o", "vlm.question='Which shape?'",
                             "vlm.answers={a: A, b: B}", "vlm.aliases={A: [alpha]}"])
    v = VLMConfig(**{**c["vlm"], "seeds": tuple(c["vlm"]["seeds"])})
    assert v.answers == {"a": "A", "b": "B"} and v.aliases == {"A": ["alpha"]}
    # the value's type is still checked, by the one validator, naming the setting
    c = compose_eval("diffusion", ["model=diffusion:m", "task=t", "out=o", "diffusion.prompts=hello"])
    with pytest.raises(DiffusionError, match=r"diffusion.prompts='hello' must be a mapping"):
        DiffusionConfig(**c["diffusion"])

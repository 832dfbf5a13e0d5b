"""Issue 33.2: every ``python -m`` command answers ``--help`` with its options (defaults, and the allowed values
where declared) and exit status 0, through the one mechanism of ``infra/cli.py``.

The commands are called in-process (their ``main(argv)``), output captured; :data:`COMMANDS` is checked complete
against the entry points found in the tree (every ``__main__.py`` and module with ``if __name__ == "__main__"``
outside ``tests/`` and ``benchmarks/``) and against the registered ``eval`` commands.
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# command (as typed after ``python -m``) -> options its --help must list
COMMANDS = {
    "render.trajectory": ["scene=", "frames=50", "size=256", "backend=auto"],
    "render.gallery": ["out=", "size=128", "(in [16, 2048])", "phase="],
    "render.drawing": ["out=null", "sheet=null", "size=128", "(in [32, 512])", "group=", "new=false"],
    "scenes.export": ["name=", "seed=0", "out=", "sidecar=true"],
    "scenes.frame": ["scene=(required)", "write=false", "frame.up="],
    "tasks.generate": ["dataset=(required)", "out=(required)", "seed=0", "workers=", "shard=", "degraded_polygons"],
    "tasks.gallery": ["root=(required)", "per_condition=6", "(in [1, 100000])"],
    "tasks.verify": ["dirs=", "at least one folder"],
    "tasks.warmup": ["progress=true", "on-disk cache"],
    "tasks.threedpc": ["out=", "seed=", "style.observer_size=", "rules.vpt_visible_min="],
    "tasks.threedpc.sheet": ["build=(required)", "task=vpt", "(one of depth, vpt)", "n=40", "blind=false"],
    "tasks.threedpc.shortcuts": ["build=(required)", "no_images=false"],
    "eval.results_3dpc": ["run", "cost", "page", "Deprecated"],
    "eval.results_3dpc run": ["build=(required)", "results=(required)", "steps=[probe,layers,finetune]",
                              "(one of probe, layers, spatial, finetune)", "probe_seeds=[0,1,2]", "finetune_frames=8",
                              "n_boot=10000", "(>= 100)", "progress=true"],
    "eval.results_3dpc cost": ["build=(required)", "model=timm:tf_efficientnet_lite0", "sizes=[]", "(in [8, 4096])",
                               "max_batches=null", "build_time=null"],
    "eval.results_3dpc page": ["results=(required)", "out=docs/results.md", "img=null", "n_boot=10000"],
    "eval": ["probe", "finetune", "stats", "zoo", "report", "ood", "decoder", "similarity", "diffusion", "vlm"],
    "eval probe": ["model=(required)", "task=(required)", "probe.epochs=50", "(>= 1)", "probe.dropout="],
    "eval finetune": ["model=(required)", "finetune.epochs=", "finetune.lr="],
    "eval stats": ["results=(required)", "humans_format=", "n_boot="],
    "eval zoo": ["usage: python -m eval zoo [name]"],
    "eval report": ["results=(required)"],
    "eval ood": ["model=(required)", "ood.aggregation=", "ood.decision="],
    "eval decoder": ["model=(required)", "decoder.targets=", "decoder.epochs="],
    "eval similarity": ["model=(required)", "similarity.reference=(required)", "similarity.metric="],
    "eval diffusion": ["model=(required)", "diffusion.weighting=", "diffusion.samples="],
    "eval vlm": ["model=(required)", "vlm.shots=", "requests.concurrency="],
    "experiment": ["serve", "export"],
    "experiment serve": ["task=", "design.n_test=", "port="],
    "experiment export": ["db=(required)", "out=(required)", "include_incomplete=false"],
}


def entry_points() -> set[str]:
    """The ``python -m`` commands found in the tree (not tests or benchmarks)."""
    found = set()
    for p in ROOT.rglob("*.py"):
        rel = p.relative_to(ROOT)
        if rel.parts[0] in ("tests", "benchmarks", ".venv") or any(x.startswith(".") for x in rel.parts):
            continue
        if p.name == "__main__.py":
            found.add(".".join(rel.parts[:-1]))
        elif re.search(r'^if __name__ == "__main__":', p.read_text(), re.M):
            found.add(".".join(rel.with_suffix("").parts))
    return found


def _main(module: str):
    mod = importlib.import_module(module + ".__main__" if (ROOT / module.replace(".", "/") / "__main__.py").exists()
                                  else module)
    return mod.main


def run_cli(command: str, args: list[str], capsys) -> tuple[int, str, str]:
    """``python -m <command> <args>`` in-process: (exit status, stdout, stderr)."""
    module, *sub = command.split(" ")
    try:
        code = _main(module)([*sub, *args])
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return int(code or 0), out.out, out.err


def test_the_help_table_lists_every_entry_point_and_every_eval_command():
    from eval.cli import load_commands

    modules = {c.split(" ")[0] for c in COMMANDS}
    assert entry_points() == modules, f"entry points without a row: {sorted(entry_points() - modules)}; " \
                                      f"rows without an entry point: {sorted(modules - entry_points())}"
    assert {c.split(" ")[1] for c in COMMANDS if c.startswith("eval ")} == set(load_commands())
    assert {c.split(" ")[1] for c in COMMANDS if c.startswith("experiment ")} == {"serve", "export"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_exits_0_and_lists_the_options(command, capsys):
    code, out, err = run_cli(command, ["--help"], capsys)
    assert code == 0, f"python -m {command} --help: exit {code}\n{err}"
    assert out.startswith("usage:"), out[:300]
    missing = [o for o in COMMANDS[command] if o not in out]
    assert not missing, f"python -m {command} --help lacks {missing}:\n{out}"


@pytest.mark.parametrize("command", ["tasks.gallery", "scenes.frame", "eval zoo", "experiment export"])
def test_short_h_is_help_too(command, capsys):
    """``-h`` as ``--help`` (one command of each mechanism: dataclass options, YAML config, eval, experiment)."""
    long, short = run_cli(command, ["--help"], capsys), run_cli(command, ["-h"], capsys)
    assert short == long and short[0] == 0


def test_a_dataset_help_lists_its_parameters_with_ranges(capsys):
    code, out, _ = run_cli("tasks.generate", ["dataset=degraded_polygons", "--help"], capsys)
    assert code == 0 and "parameters of degraded_polygons" in out and "line_width" in out and "(in [" in out


@pytest.mark.parametrize("command, args, expect", [
    ("tasks.gallery", ["x", "per_conditon=3"], "unknown setting 'per_conditon'; did you mean 'per_condition'?"),
    ("tasks.generate", ["dataset=degraded_polygon", "out=x"], "did you mean 'degraded_polygons'?"),
    ("tasks.generate", ["dataset=degraded_polygons", "out=x", "sizee=3"], "did you mean 'size'?"),
    ("render.drawing", ["out=x.png", "size=8"], "size=8 is out of range [32, 512]"),
    ("render.drawing", ["size=64"], "out= is required"),
    ("tasks.threedpc.sheet", ["b", "--task", "vpx", "--out", "x.png"], "task='vpx' is not allowed"),
    ("scenes.export", ["nme=bench_01", "out=x.ply"], "unknown setting 'nme'; did you mean 'name'?"),
    ("eval", ["prob"], "did you mean 'probe'?"),
])
def test_bad_input_is_one_error_line_with_exit_2(command, args, expect, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(command, args, capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and lines and lines[-1].startswith("error: ") and expect in lines[-1], (code, err)
    assert "Traceback" not in err + out and not list(tmp_path.iterdir())


def test_a_list_setting_takes_a_comma_list_and_one_value():
    """``key=a,b`` of a list setting is the list (Hydra would read a sweep; the dataclass commands run one job),
    one value a one-item list; a sweep of anything else, ``range()``, or a list of lists stays an error."""
    from infra.cli import parse_overrides

    lists = ("steps", "seeds")
    assert parse_overrides(["steps=probe,layers", "seeds=0,1"], lists=lists) == {"steps": ["probe", "layers"],
                                                                                 "seeds": [0, 1]}
    assert parse_overrides(["--steps", "probe,layers", "seeds=[2]"], lists=lists) == {"steps": ["probe", "layers"],
                                                                                      "seeds": [2]}
    assert parse_overrides(["steps=timm:a@random", "seeds=0"], lists=lists) == {"steps": ["timm:a@random"],
                                                                               "seeds": [0]}
    assert parse_overrides(["steps=null"], lists=lists) == {"steps": None}
    for bad in ("n=1,2", "seeds=range(0,3)", "seeds=[0,1],[2]", "seeds=choice(0,1)"):
        with pytest.raises(ValueError, match="a sweep"):
            parse_overrides([bad], lists=lists)

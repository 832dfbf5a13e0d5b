"""Issue 33.3: one registry type for every extension point, and a new generator / a new evaluation method is ONE
new module.

The toy extensions below are written as module files into a temporary folder appended to the package's search
path (``tasks.stimuli`` / ``eval.methods``: the discovery roots), exactly as a contributor adds a file to
``tasks/stimuli/`` or ``eval/methods/``; no other file is touched. Each is then listed, shown by ``--help``
with its options and run from its command line (in-process).
"""
from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from infra.registry import DuplicateName, Registry, UnknownName


# ---------------------------------------------------------------------------------------------- the type
def _f():
    pass


def _g():
    pass


def test_register_list_lookup_and_refuse_a_duplicate():
    reg: Registry = Registry("widget", key="widget")
    assert reg.register("round", _f) is _f

    @reg.register("square")
    def square():
        pass

    assert list(reg) == reg.list() == ["round", "square"] and len(reg) == 2
    assert reg.list(lambda fn: fn is _f) == ["round"]
    assert reg["square"] is square and reg.lookup("round") is _f and dict(reg.items())["round"] is _f
    assert reg.register("round", _f) is _f  # the very same object again: a no-op
    with pytest.raises(DuplicateName, match=r"widget 'round' is registered twice \(.*test_registry\._f and "
                                            r".*test_registry\._g\)"):
        reg.register("round", _g)
    assert reg["round"] is _f  # the first definition stays


def test_a_miss_suggests_the_closest_name_and_lists_the_known_ones():
    reg: Registry = Registry("widget", key="widget")
    reg.register("round", _f)
    reg.register("square", _g)
    with pytest.raises(UnknownName) as e:
        reg["rund"]
    assert str(e.value) == "unknown widget 'rund' (widget=); did you mean 'round'? known: round, square"
    assert isinstance(e.value, KeyError) and isinstance(e.value, ValueError)  # Mapping code and the CLIs' boundary
    assert reg.get("rund") is None and "rund" not in reg and 3 not in reg
    with pytest.raises(TypeError):
        reg["x"] = _f  # read-only: registration is the only way in
    reg.unregister("square")
    assert list(reg) == ["round"]


def test_every_extension_point_is_a_registry():
    """No hand-written registry is left: each extension point's module-level table is a :class:`Registry`."""
    tables = {"eval.runner": "METHODS", "eval.cli": "COMMANDS", "eval.zoo": "SOURCES", "eval.tasks": "LAYOUTS",
              "eval.vlm.providers": "PROVIDERS", "eval.humans": "HUMAN_FORMATS", "eval.ood": "CLASSIFIER_HEADS",
              "tasks.stimuli.registry": "GENERATORS", "tasks.stimuli.mindset.common": "MINDSET",
              "scenes.formats.registry": "_FORMATS", "scenes.objects": "CATEGORIES",
              "scenes.catalogue.objects": "OBJECTS"}
    for module, name in tables.items():
        reg = getattr(importlib.import_module(module), name)
        assert isinstance(reg, Registry), f"{module}.{name} is a {type(reg).__name__}, not an infra.registry.Registry"
        assert reg.discover or len(reg) > 0, f"{module}.{name} is empty"  # (a discovering one fills on listing)


# --------------------------------------------------------------------------------- one file per extension
TOY_GENERATOR = '''
    """A toy generator: grey squares whose level is drawn from the dataset seed."""
    import dataclasses

    import numpy as np

    from tasks.stimuli.registry import Item, field, register


    @dataclasses.dataclass(frozen=True)
    class ToyConfig:
        n: int = field(3, "images to make", range=(1, 50))
        size: int = field(16, "image width = height (pixels)", range=(8, 64))


    def items(cfg, seed):
        rng = np.random.default_rng(seed)
        for i in range(cfg.n):
            yield Item("grey", f"toy_{i:03d}", {"level": int(rng.integers(0, 256))})


    def render(cfg, item):
        return np.full((cfg.size, cfg.size), item.params["level"], np.uint8), {}


    register("zz_toy_squares", ToyConfig, "grey squares (a test's toy)", items=items, render=render)
'''

TOY_METHOD = '''
    """A toy evaluation method that uses no model: it answers the true label, flipping a fraction of them."""
    import dataclasses

    import numpy as np
    import pandas as pd

    from eval.runner import Method, SeedResult, register_method
    from infra.schema import field


    @dataclasses.dataclass(frozen=True)
    class ToyConfig:
        flip: float = field(0.25, "fraction of answers flipped", range=(0.0, 1.0))
        seeds: tuple[int, ...] = field((0,), "one run per seed")
        n_boot: int = field(100, "bootstrap resamples", range=(10, 100000))
        ci: float = field(0.95, "confidence level", range=(0.5, 0.999))


    @register_method("zz_toy", cli="answers the label, some flipped   task=<dataset dir> out=<results dir>",
                     uses_model=False)
    class ToyMethod(Method):
        Config = ToyConfig
        trains = False
        feature = "zero-shot"

        def run_seed(self, seed, rid):
            it = self.items
            flip = np.random.default_rng(seed).random(len(it)) < self.cfg.flip
            truth = it["label"].to_numpy()
            resp = np.where(flip, 1 - truth, truth).astype(str)
            return SeedResult(trials=pd.DataFrame({
                "split": it["split"], "item_id": it["item_id"], "label": it["label_name"], "response": resp,
                "score": 1.0, "correct": resp == it["label_name"].to_numpy()}))
'''


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A folder appended to a package's search path (as if the file were in the package), cleaned up after."""
    made: list[tuple[str, str]] = []

    def add(package: str, module: str, text: str) -> str:
        pkg = importlib.import_module(package)
        folder = tmp_path / package.replace(".", "_")
        folder.mkdir(exist_ok=True)
        (folder / f"{module}.py").write_text(textwrap.dedent(text))
        monkeypatch.setattr(pkg, "__path__", [*pkg.__path__, str(folder)])
        made.append((package, module))
        return f"{package}.{module}"

    yield add
    from eval.cli import COMMANDS
    from eval.runner import METHODS
    from tasks.stimuli.registry import GENERATORS

    for reg, name in ((GENERATORS, "zz_toy_squares"), (METHODS, "zz_toy"), (COMMANDS, "zz_toy")):
        reg.unregister(name)
        reg.refresh()
    for package, module in made:
        sys.modules.pop(f"{package}.{module}", None)


def _cli(main, argv, capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return int(code or 0), out.out, out.err


def test_a_new_generator_is_one_module(plugin_dir, tmp_path, capsys):
    import pandas as pd

    from tasks.generate import main
    from tasks.stimuli import GENERATORS

    plugin_dir("tasks.stimuli", "zz_toy_generator", TOY_GENERATOR)
    GENERATORS.refresh()
    assert "zz_toy_squares" in GENERATORS.list()
    code, out, _ = _cli(main, ["--help"], capsys)
    assert code == 0 and "zz_toy_squares" in out
    code, out, _ = _cli(main, ["dataset=zz_toy_squares", "--help"], capsys)
    assert code == 0 and "n = 3: images to make (in [1, 50])" in out and "size = 16" in out
    code, out, err = _cli(main, ["dataset=zz_toy_squares", "n=99", f"out={tmp_path}/bad"], capsys)
    assert code == 2 and "n=99 is out of range [1, 50]" in err and not (tmp_path / "bad").exists()
    code, out, err = _cli(main, ["dataset=zz_toy_squares", "n=4", "size=8", f"out={tmp_path}/toy", "progress=false"],
                          capsys)
    assert code == 0, err
    ann = pd.read_parquet(tmp_path / "toy" / "annotations.parquet")
    assert len(ann) == 4 and (tmp_path / "toy" / ann.file_name.iloc[0]).is_file()


def _image_folder(root: Path, per_class: int = 6) -> None:
    from PIL import Image

    for split in ("train", "val", "test"):
        for c in ("0", "1"):
            (root / split / c).mkdir(parents=True)
            for i in range(per_class):
                Image.new("RGB", (8, 8), (int(c) * 200, i, 0)).save(root / split / c / f"{i}.png")


def test_a_new_eval_method_is_one_module(plugin_dir, tmp_path, capsys, monkeypatch):
    from eval import results as R
    from eval.cli import COMMANDS, main
    from eval.runner import METHODS

    plugin_dir("eval.methods", "zz_toy_method", TOY_METHOD)
    METHODS.refresh()
    COMMANDS.refresh()
    assert "zz_toy" in METHODS.list() and not METHODS["zz_toy"].uses_model
    code, out, _ = _cli(main, ["--help"], capsys)
    assert code == 0 and "zz_toy" in out and "answers the label, some flipped" in out
    code, out, _ = _cli(main, ["zz_toy", "--help"], capsys)
    assert code == 0 and "zz_toy.flip=0.25" in out and "fraction of answers flipped (in [0.0, 1.0])" in out
    assert "model=" not in out  # the method uses no model: no model settings are asked for
    _image_folder(tmp_path / "ift")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # the eval CLI hands Hydra its arguments through sys.argv
    code, out, err = _cli(main, ["zz_toy", f"task={tmp_path}/ift", f"out={tmp_path}/bad", "zz_toy.flip=1.5"], capsys)
    assert code == 2 and "zz_toy.flip=1.5 is out of range [0.0, 1.0]" in err, err  # ranges checked without code
    assert not (tmp_path / "bad").exists()
    code, out, err = _cli(main, ["zz_toy", f"task={tmp_path}/ift", f"out={tmp_path}/res", "zz_toy.flip=0.0",
                                 "progress=false"], capsys)
    assert code == 0, err
    trials = R.read_results(tmp_path / "res", "trials")
    assert set(trials["method"]) == {"zz_toy"} and len(trials) == 12 and trials["correct"].all()
    assert "zz_toy" in out and "accuracy 1.000" in out

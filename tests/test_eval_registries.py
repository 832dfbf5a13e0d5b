"""Extension points: a model source, a dataset layout, an evaluation method and a 2D generator each plug
in by registration alone (no dispatch code edited), and every lookup error lists what is registered."""
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eval import results as R
from eval import methods, runner, tasks, zoo
from eval.tasks import TaskData, TaskError, load_task
from eval.zoo import ModelId, ZooError, load_model


def _task(n=40):
    ids = [f"img{i:03d}.png" for i in range(n)]
    y = np.arange(n) % 2
    items = pd.DataFrame({"item_id": ids, "path": ids, "label": y, "label_name": y.astype(str),
                          "split": ["test"] * n, "group": ids})
    return TaskData(Path("."), "toy", "test", items, ["0", "1"], ("test",))


@dataclass(frozen=True)
class OracleConfig:
    flip_every: int = 4  # every k-th response is wrong
    seeds: tuple = (0, 1)
    n_boot: int = 200
    ci: float = 0.95


class Oracle(runner.Method):
    """A zero-shot method (no training, no train/val split) that writes its own trial rows."""

    Config = OracleConfig
    trains = False
    feature = "zero-shot"
    calls = 0

    def run_seed(self, seed, rid):
        Oracle.calls += 1
        it = self.items
        wrong = (np.arange(len(it)) % self.cfg.flip_every) == 0
        resp = np.where(wrong, 1 - it["label"].to_numpy(), it["label"].to_numpy()).astype(str)
        return runner.SeedResult(trials=pd.DataFrame({
            "split": it["split"], "item_id": it["item_id"], "label": it["label_name"], "response": resp,
            "score": 1.0, "correct": resp == it["label_name"].to_numpy()}))


def test_a_zero_shot_method_runs_through_the_runner_and_resumes(tmp_path, request):
    runner.register_method("oracle")(Oracle)
    request.addfinalizer(lambda: runner.METHODS.unregister("oracle"))
    assert methods.get_method("oracle") is Oracle
    Oracle.calls = 0
    summ = runner.run_method(Oracle(_task(), OracleConfig()), "toy:model", tmp_path, progress=False)
    assert Oracle.calls == 2 and list(summ["seed"]) == [0, 1]
    assert np.allclose(summ["accuracy"], 0.75) and (summ["best_epoch"] == -1).all() and (summ["epochs_run"] == 0).all()
    trials = R.read_results(tmp_path, "trials")
    assert len(trials) == 80 and list(trials.columns) == list(R.TRIAL_DTYPES)
    assert set(trials["method"]) == {"oracle"} and set(trials["feature"]) == {"zero-shot"}
    assert set(trials["observer_type"]) == {"model"} and trials["run_id"].str.startswith("oracle__toy__").all()
    again = runner.run_method(Oracle(_task(), OracleConfig()), "toy:model", tmp_path, progress=False)
    assert Oracle.calls == 2  # finished runs are skipped, not recomputed
    pd.testing.assert_frame_equal(again.reset_index(drop=True), summ.reset_index(drop=True), check_dtype=False)


def test_method_lookup_lists_the_registered_methods():
    with pytest.raises(ValueError, match="known: .*finetune.*probe"):
        methods.get_method("similarity")


def test_a_model_source_plugs_in_by_registration(monkeypatch):
    import torch

    monkeypatch.setattr(zoo, "SOURCES", zoo.SOURCES.copy())

    @zoo.register_source("toy", "toy:<width>")
    def _load_toy(mid, weights, kwargs, versions):
        m = torch.nn.Sequential(torch.nn.Conv2d(3, int(mid.name), 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
        cfg = {"input_size": (3, 32, 32), "mean": (0.5,) * 3, "std": (0.5,) * 3, "interpolation": "bilinear",
               "crop_pct": 1.0}
        return m, cfg, lambda im: im, None, None

    assert str(ModelId.parse("toy:5")) == "toy:5"
    m = load_model("toy:5", channels_last=False)
    assert m.features(torch.zeros(2, 3, 32, 32))["pooled"].shape == (2, 5)
    assert m.weights_identity == "random:seed=0"
    with pytest.raises(ZooError, match="allowed: timm, open_clip, module, toy"):
        ModelId.parse("keras:x")


def test_an_ood_classifier_head_plugs_in_per_model_source(monkeypatch):
    """eval.ood.load_classifier asks the head registry of the model's source, not an if/elif on its name: a
    source without a head is refused naming it; registering one makes its models classifiers."""
    import torch

    from eval import ood

    assert set(ood.CLASSIFIER_HEADS) <= set(zoo.SOURCES)
    monkeypatch.setattr(zoo, "SOURCES", zoo.SOURCES.copy())
    monkeypatch.setattr(ood, "CLASSIFIER_HEADS", ood.CLASSIFIER_HEADS.copy())

    @zoo.register_source("toy", "toy:<width>")
    def _load_toy(mid, weights, kwargs, versions):
        m = torch.nn.Sequential(torch.nn.Conv2d(3, int(mid.name), 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
        cfg = {"input_size": (3, 32, 32), "mean": (0.5,) * 3, "std": (0.5,) * 3, "interpolation": "bilinear",
               "crop_pct": 1.0}
        return m, cfg, lambda im: im, None, None

    with pytest.raises(ZooError, match="toy:5: OOD classification needs a 1000-way ImageNet classifier"):
        ood.load_classifier("toy:5")

    @ood.register_classifier_head("toy")
    def _toy_head(loaded, weights, device):
        loaded.module.append(torch.nn.Linear(5, 1000))

    clf = ood.load_classifier("toy:5")
    assert clf.module(torch.zeros(1, 3, 32, 32)).shape == (1, 1000)


def test_a_dataset_layout_plugs_in_by_registration(tmp_path, monkeypatch):
    monkeypatch.setattr(tasks, "LAYOUTS", tasks.LAYOUTS.copy())
    (tmp_path / "toy.csv").write_text("x\n")

    @tasks.register_layout("toy", "a toy.csv file", lambda root: (root / "toy.csv").is_file())
    def _read_toy(root, target, val_fraction, test_fraction, split_seed, conditions):
        return _task()

    assert load_task(tmp_path).name == "toy"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TaskError, match="ImageFolder with train/val/test sub-folders, or a toy.csv file"):
        load_task(empty)


def test_generators_register_items_and_render_explicitly():
    from tasks.stimuli import GENERATORS, ConfigError
    from tasks.stimuli.registry import get_generator, register

    for name, gen in GENERATORS.items():  # each module registers its own pair of functions
        assert callable(gen.render) and gen.render.__module__ == gen.items.__module__ == gen.module, name
    gen = get_generator("degraded_polygons")
    with pytest.raises(ValueError, match="registered twice"):
        register("degraded_polygons", gen.Config, "again", items=gen.items, render=gen.render)
    with pytest.raises(ConfigError, match="unknown dataset .*known: .*abutting_digits.*degraded_polygons"):
        get_generator("shapes")

"""Each default has one source: the Python signature or dataclass. The YAML files Hydra composes mirror
them for the command line; this test fails the moment a YAML default, a dataclass default or a prop
colour drifts from its source (see docs/ARCHITECTURE.md, "Configuration")."""
from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _yaml(rel: str) -> dict:
    d = yaml.safe_load((ROOT / "configs" / rel).read_text())
    d.pop("defaults", None)
    d.pop("hydra", None)
    return d


def _signature_defaults(fn) -> dict:
    return {k: p.default for k, p in inspect.signature(fn).parameters.items() if p.default is not inspect.Parameter.empty}


def _same(yaml_values: dict, source: dict, where: str) -> None:
    for k, v in yaml_values.items():
        assert k in source, f"configs/{where}: {k!r} is not a setting of its source (known: {sorted(source)})"
        want = list(source[k]) if isinstance(source[k], tuple) else source[k]
        assert v == want, f"configs/{where}: {k}={v!r} but its source says {want!r}"


def test_trajectory_yaml_mirrors_render_trajectory():
    from tasks.trajectory import render_trajectory

    d = _yaml("trajectory.yaml")
    src = _signature_defaults(render_trajectory)
    src["out"] = str(src["out"])
    assert set(d) == set(src) - {"props"}, "trajectory.yaml and render_trajectory() name different settings"
    _same(d, src, "trajectory.yaml")


def test_export_yaml_mirrors_export_scene():
    from scenes.export import export_scene

    d = _yaml("export.yaml")
    _same({"seed": d["seed"]}, _signature_defaults(export_scene), "export.yaml")
    assert d["out"] == "${name}.ply"


def test_prop_style_and_label_rules_yaml_mirror_their_dataclasses():
    from tasks.labels import LabelRules
    from tasks.placement import PropStyle

    for rel, cls in (("prop_style/default.yaml", PropStyle), ("label_rules/default.yaml", LabelRules)):
        d = _yaml(rel)
        src = {f.name: f.default for f in dataclasses.fields(cls)}
        assert set(d) == set(src), f"configs/{rel} and {cls.__name__} name different fields"
        _same(d, src, rel)


def test_prop_colours_agree_everywhere():
    from scenes.props import GREEN, RED
    from tasks.placement import PropStyle

    assert (PropStyle.observer_color, PropStyle.target_color) == (GREEN, RED)


def test_one_config_error_and_one_validator_for_every_tasks_config():
    """Issue 21.3: the 2D generators, the 3D-PC build, its label rules and its audit gates raise the same
    ConfigError from the same field declarations (tasks/schema.py), naming the field, the value and the range."""
    import pytest

    from tasks.labels import LabelRules
    from tasks.schema import ConfigError
    from tasks.stimuli.registry import ConfigError as StimuliConfigError
    from tasks.threedpc import ConfigError as BuildConfigError
    from tasks.threedpc.shortcuts import AuditConfig

    assert StimuliConfigError is ConfigError and BuildConfigError is ConfigError
    with pytest.raises(ConfigError, match=r"alpha_hidden=1\.5 is out of range \[0, 1\]"):
        LabelRules(alpha_hidden=1.5)
    with pytest.raises(ConfigError, match=r"pixel_size=2 is out of range \[4, 256\]"):
        AuditConfig(pixel_size=2)
    with pytest.raises(ConfigError, match="vpt_auc_low <= vpt_auc_high"):
        AuditConfig(vpt_auc_low=0.7, vpt_auc_high=0.6)
    assert AuditConfig(depth_pixel_max=None).depth_pixel_max is None  # optional gates may stay unset
    for cls in (LabelRules, AuditConfig):
        assert all(f.metadata.get("help") for f in dataclasses.fields(cls)), f"{cls.__name__}: every field documented"

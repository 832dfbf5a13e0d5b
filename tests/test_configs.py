"""Each default has one source: the Python signature or dataclass. The dataclasses are registered as Hydra
structured configs (no YAML copy); the YAML files that remain mirror function signatures for the command
line. These tests fail the moment a composed default, a YAML default or a prop colour drifts from its source
(see docs/configuration.md)."""
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
    frame = d.pop("frame")
    from scenes.canonical import FrameHints

    assert tuple(frame) == FrameHints.KEYS, "trajectory.yaml's frame keys are FrameHints' fields"
    assert all(v is None for k, v in frame.items() if k != "ground_mode"), "every frame setting defaults to estimated"
    assert frame["ground_mode"] == FrameHints().ground_mode
    src.pop("frame")
    _same(d, src, "trajectory.yaml")


def test_export_yaml_mirrors_export_scene():
    from scenes.export import export_scene

    d = _yaml("export.yaml")
    _same({"seed": d["seed"]}, _signature_defaults(export_scene), "export.yaml")
    assert d["out"] == "${name}.ply"


def _plain_defaults(cls, skip=()) -> dict:
    """A dataclass's defaults as Hydra composes them (tuples as lists)."""
    return {f.name: list(f.default) if isinstance(f.default, tuple) else f.default
            for f in dataclasses.fields(cls) if f.name not in skip and f.default is not dataclasses.MISSING}


def test_structured_config_groups_are_their_dataclasses():
    """Issue 21.3: prop_style, label_rules, audit and the preset's defaults are the dataclasses themselves
    (Hydra structured configs), so the composed command-line config cannot drift from them and no YAML
    restates them."""
    from infra.cli import compose
    from scenes.catalogue import catalogue_names
    from tasks.labels import LabelRules
    from tasks.placement import PropStyle
    from tasks.threedpc.config import BuildConfig, config_from_dict, register_configs
    from tasks.threedpc.shortcuts import AuditConfig

    for group in ("prop_style", "label_rules", "audit", "preset"):
        assert not (ROOT / "configs" / group / "default.yaml").exists(), f"configs/{group}/default.yaml restates it"
    register_configs()
    d = compose("threedpc", ["out=x"])
    assert d["style"] == _plain_defaults(PropStyle)
    assert d["rules"] == _plain_defaults(LabelRules)
    assert d["audit"] == _plain_defaults(AuditConfig)
    build = _plain_defaults(BuildConfig, skip=("style", "rules", "audit", "scene_splits", "scene_frames"))
    assert {k: d[k] for k in build} == build
    assert (d["scenes"], d["scene_splits"], d["scene_frames"]) == ("catalogue", None, None)
    assert config_from_dict(d) == BuildConfig(scenes=tuple(catalogue_names()), out="x")
    for props in ("sample", "explicit"):
        p = compose("trajectory", [f"props={props}"])["props"]
        assert p["style"] == _plain_defaults(PropStyle) and p["rules"] == _plain_defaults(LabelRules)
    # the CLI spellings keep working, typed by the dataclass (OmegaConf converts 64 -> int, 0.2 -> float)
    d = compose("threedpc", ["out=x", "rules.n_rays=64", "audit.enforce=false", "style.target_size=0.2"])
    assert (d["rules"]["n_rays"], d["audit"]["enforce"], d["style"]["target_size"]) == (64, False, 0.2)
    import pytest

    with pytest.raises(Exception, match="n_rays"):
        compose("threedpc", ["out=x", "rules.n_rays=many"])


def test_preset_and_section_checks_come_from_the_field_declarations():
    """The build's own ranges and the prop style's live in their fields' metadata (infra.schema.field), checked
    by the one validator with the dotted key in the message."""
    import pytest

    from tasks.placement import PropStyle
    from infra.schema import ConfigError, make_section
    from tasks.threedpc.config import BuildConfig

    undeclared = {"scenes", "out", "scene_splits", "scene_frames", "style", "rules", "audit"}  # required, or sections / pairs
    for cls, skip in ((PropStyle, set()), (BuildConfig, undeclared)):
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in skip and not f.metadata.get("help")]
        assert not missing, f"{cls.__name__}: fields not declared with infra.schema.field: {missing}"
    with pytest.raises(ConfigError, match=r"style\.target_color=\(1, 0\) must have 3 values"):
        make_section(PropStyle, {"target_color": (1, 0)}, "style")
    with pytest.raises(ConfigError, match=r"style\.observer_fov_deg=200 is out of range \[1, 170\]"):
        make_section(PropStyle, {"observer_fov_deg": 200}, "style")
    with pytest.raises(ConfigError, match=r"rules\.n_rays=1\.5 must be a whole number"):
        from tasks.labels import LabelRules

        make_section(LabelRules, {"n_rays": 1.5}, "rules")


def test_eval_method_sections_are_their_dataclasses():
    """Each evaluation command's settings section (``probe:``, ``ood:`` ...) is its dataclass registered as a
    structured config (``@command(..., settings=...)``): composed, it equals the dataclass's defaults (``???``
    for the settings the command line must give), and no YAML restates it."""
    import importlib

    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from eval.cli import COMMANDS, load_commands, register_settings

    load_commands()
    sections = {name: c for name, c in COMMANDS.items() if c.settings}
    assert set(sections) >= {"probe", "finetune", "ood", "decoder", "similarity", "diffusion", "vlm"}
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="configs", version_base=None):
        for name, cmd in sections.items():
            assert name not in yaml.safe_load((ROOT / "configs" / f"eval_{name}.yaml").read_text()), \
                f"configs/eval_{name}.yaml restates its {name}: section"
            register_settings(cmd)
            module, cls_name = cmd.settings.split(":")
            cls = getattr(importlib.import_module(module), cls_name)
            want = {**_plain_defaults(cls), **dict.fromkeys(cmd.required, "???")}
            got = OmegaConf.to_container(compose(config_name=f"eval_{name}")[name])
            assert got == want, f"eval_{name}: {name}: composes to {got}, its dataclass says {want}"
    GlobalHydra.instance().clear()


def test_prop_colours_agree_everywhere():
    from scenes.props import GREEN, RED
    from tasks.placement import PropStyle

    assert (PropStyle.observer_color, PropStyle.target_color) == (GREEN, RED)


def test_one_config_error_and_one_validator_for_every_tasks_config():
    """Issue 21.3: the 2D generators, the 3D-PC build, its label rules and its audit gates raise the same
    ConfigError from the same field declarations (tasks/schema.py), naming the field, the value and the range."""
    import pytest

    from tasks.labels import LabelRules
    from infra.schema import ConfigError
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


def test_eval_and_experiment_settings_use_the_one_validator():
    """Issue 21.3: the evaluation methods' settings and the experiment design are declared with
    infra.schema.field and checked by infra.schema (one ConfigError naming ``<section>.<field>``)."""
    import pytest

    from eval.decoders import DecoderConfig
    from eval.diffusion import DiffusionConfig
    from eval.finetune import FinetuneConfig
    from eval.ood import OODConfig
    from eval.probe import ProbeConfig
    from eval.similarity import SimilarityConfig
    from eval.vlm.run import RequestSettings, VLMConfig
    from experiment.design import Design, design_from_config
    from infra.schema import ConfigError

    cases = [(ProbeConfig, {}, "probe", "n_boot"), (FinetuneConfig, {}, "finetune", "n_boot"),
             (OODConfig, {}, "ood", "n_boot"), (DecoderConfig, {"targets": ("y",)}, "decoder", "n_boot"),
             (SimilarityConfig, {"reference": "a"}, "similarity", "n_boot"), (DiffusionConfig, {}, "diffusion", "n_boot"),
             (VLMConfig, {}, "vlm", "n_boot"), (RequestSettings, {}, "requests", "concurrency")]
    for cls, ok, section, key in cases:
        declared = [f.name for f in dataclasses.fields(cls) if "help" in f.metadata]
        assert declared == [f.name for f in dataclasses.fields(cls)], f"{cls.__name__}: undeclared settings"
        cls(**ok)
        with pytest.raises(ConfigError, match=rf"^{section}\.{key}=0 is not allowed"):
            cls(**ok, **{key: 0})
        with pytest.raises(ConfigError, match=rf"^{section}\.{key}='x' must be a whole number"):
            cls(**ok, **{key: "x"})
    assert all("help" in f.metadata for f in dataclasses.fields(Design) if f.type == "int")
    with pytest.raises(ConfigError, match=r"design\.image_px=16 is out of range \[32, 4096\]"):
        design_from_config({**dataclasses.asdict(Design()), "image_px": 16})

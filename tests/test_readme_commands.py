"""Every command form the README prints works (issue 34, item 10).

Part 1 (here): mapping settings given on the command line (``diffusion.prompts={a: ..., b: ...}``,
``vlm.answers={...}``) reach the program: they ended in ``'NoneType' object has no attribute 'get'`` inside
Hydra's composition (tasks/schema.py: ``_loose_mappings``).
"""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _compose_eval(name: str, overrides: list[str]) -> dict:
    from eval.cli import COMMANDS, load_commands, register_settings
    from render.cli import compose

    load_commands()
    register_settings(COMMANDS[name])
    return compose(f"eval_{name}", overrides)


def test_mapping_settings_compose_from_the_command_line():
    from eval.diffusion import DiffusionConfig, DiffusionError
    from eval.vlm import VLMConfig

    c = _compose_eval("diffusion", ["model=diffusion:m", "task=t", "out=o", "diffusion.prompts={a: a cat, b: a dog}"])
    assert DiffusionConfig(**c["diffusion"]).prompts == {"a": "a cat", "b": "a dog"}
    assert _compose_eval("diffusion", ["model=diffusion:m", "task=t", "out=o"])["diffusion"]["prompts"] is None
    c = _compose_eval("vlm", ["model=openai:m", "task=t", "out=o", "vlm.question='Which shape?'",
                              "vlm.answers={a: A, b: B}", "vlm.aliases={A: [alpha]}"])
    v = VLMConfig(**{**c["vlm"], "seeds": tuple(c["vlm"]["seeds"])})
    assert v.answers == {"a": "A", "b": "B"} and v.aliases == {"A": ["alpha"]}
    # the value's type is still checked, by the one validator, naming the setting
    c = _compose_eval("diffusion", ["model=diffusion:m", "task=t", "out=o", "diffusion.prompts=hello"])
    with pytest.raises(DiffusionError, match=r"diffusion.prompts='hello' must be a mapping"):
        DiffusionConfig(**c["diffusion"])

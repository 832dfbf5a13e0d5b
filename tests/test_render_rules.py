"""Kernel rules and SH constants are stated once (render/rules.py, scenes/sh.py) and every backend uses
them: no backend may carry its own copy as a literal, where it could drift from the others."""
from __future__ import annotations

import ast
from pathlib import Path

from render import rules
from scenes import sh

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ["render/_cpu.py", "render/_torch_impl.py", "render/_gsplat.py", "render/splat.py"]


def _literals(path: Path) -> set[float]:
    return {n.value for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, float)}


def test_backends_hold_no_copy_of_a_rule_or_sh_constant():
    shared = {rules.ALPHA_MAX, rules.T_STOP, rules.EPS2D, rules.EXTENT_MAX, rules.NEAR, rules.FAR,
              sh.C0, sh.C1, *sh.C2, *sh.C3}
    for rel in BACKENDS:
        copies = _literals(ROOT / rel) & shared
        assert not copies, f"{rel} repeats {sorted(copies)}; import them from render.rules / scenes.sh"


def test_backends_see_the_same_values():
    from render import _cpu, _torch_impl

    assert float(_cpu.ALPHA_MIN) == float(__import__("numpy").float32(rules.ALPHA_MIN))
    assert _torch_impl.ALPHA_MIN == rules.ALPHA_MIN and _cpu.ALPHA_MIN_INV == 255.0
    assert (_cpu.C0, _cpu.C1, (_cpu.C20, _cpu.C21, _cpu.C22, _cpu.C23, _cpu.C24)) == (sh.C0, sh.C1, sh.C2)
    assert (_cpu.C30, _cpu.C31, _cpu.C32, _cpu.C33, _cpu.C34, _cpu.C35, _cpu.C36) == sh.C3
    assert _cpu.TILE == _torch_impl.TILE == rules.TILE


def test_sh_constants_are_stated_once_in_the_whole_code_base():
    """The real-SH constants appear as literals only in scenes/sh.py (scenes.gaussians' SH_C0 is sh.C0)."""
    from scenes import gaussians

    assert gaussians.SH_C0 is sh.C0
    constants = {sh.C0, sh.C1, *sh.C2, *sh.C3}
    for top in ("scenes", "render", "tasks", "eval", "experiment"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path == ROOT / "scenes" / "sh.py":
                continue
            copies = _literals(path) & constants
            assert not copies, f"{path.relative_to(ROOT)} repeats SH constants {sorted(copies)}; import scenes.sh"

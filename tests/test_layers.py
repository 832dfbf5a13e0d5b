"""The layers the folders promise are the layers in the imports.

``infra`` (files, tables, images, output folders, hashing, safe loading, CLI plumbing, pools) < ``scenes``
(geometry, cameras, Gaussian scenes, scene files) < ``render`` (how it becomes pixels) < ``tasks`` < ``eval`` < ``experiment``. A module
may import its own layer and the layers below it, never one above — at module level or inside a function
(a deferred import is still a dependency). The only exceptions are the declared CLI entry modules below:
a command whose name the user knows (``python -m render.trajectory``) may call the layer that owns its
work. Every module is parsed with ``ast``; nothing is imported, so the test is fast and also sees imports
on code paths no other test runs.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ["infra", "scenes", "render", "tasks", "eval", "experiment"]  # lowest first
RANK = {name: i for i, name in enumerate(LAYERS)}

# module -> the modules above its layer it may import (and why), each a thin CLI over them
CLI_ENTRY_MODULES = {
    "render.trajectory": {"tasks.trajectory"},  # the user's command; the application lives in tasks
}

# import cycles inside a layer that are known and not yet removed (see docs/ARCHITECTURE.md, Layers)
KNOWN_CYCLES: list[set[str]] = []


def _modules() -> dict[str, Path]:
    mods = {}
    for top in LAYERS:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


@functools.lru_cache(maxsize=None)
def _imports(module: str, path: Path) -> list[tuple[int, str, str]]:
    """(line, imported module, source text) for every import statement anywhere in the file (read once)."""
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source, filename=str(path))

    def segment(node) -> str | None:  # ast.get_source_segment without re-splitting the file per statement
        if node.end_lineno is None:
            return None
        chunk = lines[node.lineno - 1:node.end_lineno]
        if len(chunk) == 1:
            return chunk[0].encode()[node.col_offset:node.end_col_offset].decode()
        first, last = chunk[0].encode()[node.col_offset:].decode(), chunk[-1].encode()[:node.end_col_offset].decode()
        return "\n".join([first, *chunk[1:-1], last])

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, segment(node) or a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names] if not node.module or node.level else []
            text = segment(node) or target
            out.append((node.lineno, target, text))
            out += [(node.lineno, n, text) for n in names]  # ``from . import x`` imports module x
    return out


def _layer(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in RANK else None


def test_no_upward_imports():
    bad = []
    for module, path in _modules().items():
        own = _layer(module)
        for line, target, text in _imports(module, path):
            layer = _layer(target)
            if layer is None or RANK[layer] <= RANK[own]:
                continue
            if any(target == ok or target.startswith(ok + ".") for ok in CLI_ENTRY_MODULES.get(module, ())):
                continue
            bad.append(f"{path.relative_to(ROOT)}:{line}: {module} ({own}) imports {target} ({layer}): {text}")
    assert not bad, "upward imports (a lower layer must not depend on a higher one):\n" + "\n".join(bad)


def test_cli_entry_modules_import_upward_only_in_the_command():
    """An exempt module's upward imports sit inside its command functions (``main``, ``_cli_job``), so
    importing the module as a library never pulls in the layer above."""
    mods = _modules()
    for module, allowed in CLI_ENTRY_MODULES.items():
        path = mods[module]
        tree = ast.parse(path.read_text())
        spans = [(n.lineno, n.end_lineno) for n in tree.body
                 if isinstance(n, ast.FunctionDef) and n.name in ("main", "_cli_job")]
        for line, target, text in _imports(module, path):
            if any(target == ok or target.startswith(ok + ".") for ok in allowed):
                assert any(a <= line <= b for a, b in spans), f"{path.name}:{line}: {text} outside main/_cli_job"


def test_no_new_import_cycles():
    """No two modules import each other (directly or through others), deferred imports included."""
    mods = _modules()
    graph = {m: set() for m in mods}
    for module, path in mods.items():
        for _, target, _ in _imports(module, path):
            while target and target not in mods:  # ``from scenes.load import load_scene`` -> scenes.load
                target = target.rpartition(".")[0]
            parent = module.rpartition(".")[0]
            # a module importing its own package's __init__ (or vice versa) is how packages work, not a cycle
            if target and target != module and target != parent and not module.startswith(target + "."):
                graph[module].add(target)
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(comp)

    for v in graph:
        if v not in index:
            visit(v)
    new = [sorted(c) for c in sccs if c not in KNOWN_CYCLES]
    assert not new, f"import cycles: {new}"


def test_the_test_sees_upward_and_deferred_imports(tmp_path):
    """The parser finds relative, absolute, module-level and function-level imports (with their lines)."""
    src = tmp_path / "x.py"
    src.write_text("import os\nfrom .files import a\n\ndef f():\n    from tasks.labels import vpt_label\n")
    found = _imports("scenes.x", src)
    assert (2, "scenes.files", "from .files import a") in found
    assert (5, "tasks.labels", "from tasks.labels import vpt_label") in found


# what the geometry and pixel layers offer the layers above: everything else (files, images, CLI) is infra's
GEOMETRY_AND_PIXELS = {"scenes", "render"}


def test_other_layers_import_scenes_and_render_only_for_geometry_and_pixels():
    """No package reaches into ``scenes``/``render`` for files, tables, CLI plumbing or pools (issue 33): those
    live in ``infra``, and neither ``scenes`` nor ``render`` has a module of that kind."""
    plumbing = {"files", "cli", "pool", "images", "outputs", "safe_load"}
    for top in GEOMETRY_AND_PIXELS:
        found = sorted(p.stem for p in (ROOT / top).rglob("*.py") if p.stem in plumbing)
        assert not found, f"{top}/ has plumbing modules {found}: they belong in infra/"
    infra_names = set()
    for path in (ROOT / "infra").glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                infra_names.add(node.name)
    bad = []
    for module, path in _modules().items():
        top = module.split(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.split(".")[0] in GEOMETRY_AND_PIXELS and node.module.split(".")[0] != top:
                bad += [f"{module}: from {node.module} import {a.name}" for a in node.names if a.name in infra_names]
    assert not bad, "imported from scenes/render although infra owns it:\n" + "\n".join(bad)

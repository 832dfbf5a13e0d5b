"""``python -m tasks.warmup`` (run by ``make setup``) compiles every numba kernel of the tree that is cached on
disk, so that no later process (test workers, build workers) compiles one again."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# after the warm-up in a fresh process: every numba dispatcher of the modules that hold compiled kernels, found by
# walking their globals (and the kernel factories' results), with its signature count; inline="always" helpers
# are compiled into their callers and have no code of their own
PROBE = r"""
import json
import numba
from tasks.warmup import warm
warm(progress=False)
from render import _cpu, drawing
from tasks import raycast
from tasks.stimuli.mindset import common
found = {}
for mod in (_cpu, drawing, raycast, common):
    for name, obj in vars(mod).items():
        objs = obj.items() if isinstance(obj, dict) else [(name, obj)]
        for k, f in objs:
            if isinstance(f, numba.core.dispatcher.Dispatcher) and f.targetoptions.get("inline") != "always":
                found[mod.__name__ + "." + f.py_func.__name__] = (len(f.signatures), f._cache.__class__.__name__)
for f in (drawing._kernel(), *common._glyph_kernels()):
    found["factory." + f.py_func.__name__] = (len(f.signatures), f._cache.__class__.__name__)
print(json.dumps(found))
"""


def test_warmup_compiles_every_cached_kernel():
    declared = {p.relative_to(ROOT).as_posix() for d in ("render", "scenes", "tasks", "eval", "infra")
                for p in (ROOT / d).rglob("*.py") if p.name != "warmup.py" and "cache=True" in p.read_text()}
    assert declared == {"render/_cpu.py", "render/drawing.py", "tasks/raycast.py",
                        "tasks/stimuli/mindset/common.py"}, "a new module caches kernels: add it to PROBE and STEPS"
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    found = json.loads(r.stdout.strip().splitlines()[-1])
    cached = {k: n for k, (n, cache) in found.items() if cache != "NullCache"}
    assert len(cached) >= 2 * 9 + 5, sorted(found)  # the renderer's stages twice, and five more kernels
    # not compiled by the warm-up, on purpose: a helper compiled into its only caller (nearest_hits) gets no
    # signature of its own; the per-Gaussian tile list of the plain binning twin is used by tests only
    exempt = {"tasks.raycast._dot", "render._cpu._tiles_of"}
    assert exempt <= set(cached), sorted(cached)
    assert all(n >= 1 for k, n in cached.items() if k not in exempt), {k: n for k, n in cached.items() if n < 1}

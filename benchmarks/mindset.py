"""MindSet: Vision, the whole ``paper`` preset of every registered MindSet dataset through the shared writer
(issue 13: its 19 datasets, ~40,000 images at 224 px, in <= 3 minutes on 2 cores; issue 32: the paper presets of
all MindSet datasets — the original's stimuli and counts, ~200,000 images — in <= 10 minutes on 2 cores).

    python benchmarks/mindset.py [--workers 2] [--out DIR] [--only NAME ...] [--keep]
    python benchmarks/mindset.py --cpu-total RESULTS.jsonl [--workers 2] [--only NAME ...]
    python benchmarks/mindset.py --sheet NAME OUT.png [--preset paper] [--pick N] [--tile 112]

Each dataset is written with ``write_dataset(name, out, {"preset": "paper"}, workers=...)`` — items, rendering,
PNG encoding, shards, table, manifest — into a fresh folder (default: a temporary folder in the RAM file
system ``/dev/shm`` when there is one, so the kernel's file-creation cost on a shared disk does not drown the
programs' own speed; ``--out`` to time a disk). Wall time per dataset, images/s, and the total are printed as
a Markdown table. The worker pool's start-up (fork server, imports) is counted in each dataset's time: it is
what a user waits for.

The machine may be shared: the load average is printed before and after, and a fixed baseline workload
(encoding 500 copies of a 224 × 224 grey stimulus with the writer's PNG encoder, one process) is timed at the
start and at the end, so figures from different runs can be compared as ratios to it.

On a machine busier than its cores, wall time says more about the neighbours than about the code, so each
dataset's CPU cost is also measured in this process (``time.process_time``: the items pass, then rendering +
PNG encoding of ``--cpu-sample`` evenly spaced items, scaled to the whole dataset), and the wall time of the
whole preset on 2 idle cores is projected as Σ items + Σ render / 2 (the items pass is serial, rendering is
split over the workers; tables and manifests are not counted — under a second per dataset).

``--cpu-total`` measures instead what a user's command costs: each dataset's ``paper`` preset is written by
``python -m tasks.generate dataset=<name> preset=paper workers=<n>`` in a child process (into the RAM folder,
deleted after), and the child's user + sys CPU seconds — its own and its reaped descendants', the worker pool
included (``resource.getrusage(RUSAGE_CHILDREN)`` around the child) — are recorded per dataset, one JSON line
each in RESULTS.jsonl. A run is resumable: datasets already in the file are skipped, so a run cut short (a
shared machine, a deadline) goes on where it stopped. The table printed at the end gives CPU s per dataset and
their sum / 2, the wall time on 2 idle cores when both cores are busy throughout (CPU seconds hardly depend on
the neighbours' load, wall seconds do). The baseline workload's CPU seconds, measured just before each dataset,
are recorded beside it (``baseline_cpu_s``) and the table gives each dataset's CPU / baseline, so runs on
differently loaded machines (or before / after a change) compare as ratios.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def baseline(clock=time.perf_counter) -> float:
    """Seconds (of ``clock``: wall by default, ``time.process_time`` for CPU) to PNG-encode 500 copies of a
    fixed 224×224 RGB stimulus (a disc and a grating)."""
    import numpy as np

    from infra.images import png_bytes

    yy, xx = np.mgrid[0:224, 0:224] + 0.5
    g = 127.5 + 127.5 * np.cos(0.3 * xx)
    g[(xx - 112) ** 2 + (yy - 112) ** 2 < 50 ** 2] = 200
    img = np.repeat(g.astype(np.uint8)[:, :, None], 3, axis=2)
    t = clock()
    for _ in range(500):
        png_bytes(img)
    return clock() - t


def cpu_cost(name: str, sample: int) -> tuple[float, float]:
    """(CPU s of the items pass, CPU ms per image of render + PNG encoding over ``sample`` evenly spaced
    items) of dataset ``name``'s paper preset, in this process."""
    from infra.images import png_bytes
    from tasks.stimuli import GENERATORS
    from tasks.stimuli.registry import make_config

    gen = GENERATORS[name]
    cfg = make_config(gen, {"preset": "paper"})
    t = time.process_time()
    items = list(gen.items(cfg, 0))
    items_s = time.process_time() - t
    chosen = items[:: max(1, len(items) // sample)]
    for it in chosen[:2]:  # warm caches (fonts, a cached 3D scene) as a worker's first images do
        gen.render(cfg, it)
    t = time.process_time()
    for it in chosen:
        png_bytes(gen.render(cfg, it)[0])
    return items_s, 1000 * (time.process_time() - t) / len(chosen)


def cpu_total(names: list[str], results: Path, workers: int) -> None:
    """Write each dataset's paper preset in a child process; append {name, images, cpu_s, wall_s} to
    ``results`` (skipping names already there); print the table of all recorded datasets."""
    import json
    import resource
    import subprocess

    done = {}
    if results.exists():
        for line in results.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[r["name"]] = r
    ram = "/dev/shm" if os.path.isdir("/dev/shm") else None
    root = Path(__file__).resolve().parents[1]
    for name in names:
        if name in done:
            continue
        out = Path(tempfile.mkdtemp(prefix="vantage-mindset-cpu-", dir=ram))
        base = baseline(time.process_time)  # the fixed workload's CPU s just before: runs compare as ratios
        try:
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "tasks.generate", f"dataset={name}", "preset=paper",
                            f"out={out / 'd'}", f"workers={workers}", "progress=false"], check=True, cwd=root,
                           stdout=subprocess.DEVNULL)
            wall = time.perf_counter() - t
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            n = json.loads((out / "d" / "manifest.json").read_text())["images"]
        finally:
            shutil.rmtree(out, ignore_errors=True)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        done[name] = {"name": name, "images": n, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
                      "load": round(os.getloadavg()[0], 1), "workers": workers, "baseline_cpu_s": round(base, 4),
                      "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
        with results.open("a") as f:
            f.write(json.dumps(done[name]) + "\n")
        print(f"{name}: {n} images, {cpu:.1f} CPU s, {wall:.1f} wall s", file=sys.stderr, flush=True)
    print("| dataset | images | user + sys CPU s | CPU s / baseline CPU s | wall s (shared machine) |\n"
          "|---|---:|---:|---:|---:|")
    rows = [done[n] for n in names if n in done]
    for r in rows:
        ratio = f"{r['cpu_s'] / r['baseline_cpu_s']:.0f}" if r.get("baseline_cpu_s") else "—"
        print(f"| {r['name']} | {r['images']:,} | {r['cpu_s']:.1f} | {ratio} | {r['wall_s']:.1f} |")
    cpu = sum(r["cpu_s"] for r in rows)
    print(f"| **total ({len(rows)} of {len(names)})** | **{sum(r['images'] for r in rows):,}** | **{cpu:.0f}** | "
          f"| **{sum(r['wall_s'] for r in rows):.0f}** |")
    print(f"\nprojection on 2 idle cores: CPU / 2 = {cpu / 2:.0f} s = {cpu / 120:.1f} min")


def sheet(name: str, out_png: Path, preset: str = "paper", pick: int = 36, tile: int = 112, seed: int = 0,
          items: list[str] | None = None) -> Path:
    """A contact sheet of ``pick`` evenly spaced items of dataset ``name``'s ``preset`` (or the named
    ``items``), rendered by the generator, each tile labelled with its item id (to look at what a preset
    draws; docs/img/mindset_*.png)."""
    import math

    from PIL import Image, ImageDraw

    from tasks.stimuli import GENERATORS
    from tasks.stimuli.registry import make_config

    gen = GENERATORS[f"mindset/{name}"]
    cfg = make_config(gen, {"preset": preset})
    every = list(gen.items(cfg, seed))
    if items:
        chosen = [it for it in every if it.item_id in items]
    else:
        step = len(every) / min(pick, len(every))
        chosen = [every[int(k * step)] for k in range(min(pick, len(every)))]
    cols = min(len(chosen), 9)
    rows = math.ceil(len(chosen) / cols)
    img = Image.new("RGB", (cols * (tile + 2), rows * (tile + 14)), (90, 90, 90))
    for k, it in enumerate(chosen):
        arr = gen.render(cfg, it)[0]
        t = Image.fromarray(arr).convert("RGB").resize((tile, tile), Image.LANCZOS)
        x, y = (k % cols) * (tile + 2), (k // cols) * (tile + 14)
        img.paste(t, (x, y + 12))
        ImageDraw.Draw(img).text((x + 2, y), it.item_id[:22], fill=(255, 255, 120))
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    img.save(out_png)
    return out_png


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None, help="parent folder for the datasets (default: a temp dir, RAM if any)")
    ap.add_argument("--only", nargs="*", default=None, help="dataset names (without mindset/) to run")
    ap.add_argument("--keep", action="store_true", help="keep the generated datasets")
    ap.add_argument("--cpu-sample", type=int, default=60, help="items per dataset timed for the CPU projection")
    ap.add_argument("--cpu-total", default=None, metavar="RESULTS.jsonl",
                    help="measure user + sys CPU s of each dataset's generate command (resumable; see docstring)")
    ap.add_argument("--sheet", nargs=2, metavar=("NAME", "OUT"), help="write a contact sheet of a dataset preset")
    ap.add_argument("--preset", default="paper")
    ap.add_argument("--pick", type=int, default=36, help="sheet: items, evenly spaced over the preset")
    ap.add_argument("--items", nargs="*", default=None, help="sheet: these item ids instead")
    ap.add_argument("--tile", type=int, default=112, help="sheet: tile size (px)")
    args = ap.parse_args(argv)
    if args.sheet:
        sheet(args.sheet[0], Path(args.sheet[1]), args.preset, args.pick, args.tile, items=args.items)
        return 0

    from tasks.stimuli import GENERATORS, write_dataset
    from tasks.stimuli.mindset import MINDSET

    names = sorted(n for n in GENERATORS if n in MINDSET)
    if args.only:
        names = [n for n in names if n.split("/", 1)[1] in args.only]
    if args.cpu_total:
        cpu_total(names, Path(args.cpu_total), args.workers)
        return 0
    ram = "/dev/shm" if os.path.isdir("/dev/shm") else None
    parent = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="vantage-mindset-", dir=ram))
    parent.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()
    base0 = baseline()
    rows, total_n, t_all = [], 0, time.perf_counter()
    try:
        for name in names:
            out = parent / name.replace("/", "__")
            t = time.perf_counter()
            write_dataset(name, out, {"preset": "paper"}, workers=args.workers, overwrite=True, progress=False)
            dt = time.perf_counter() - t
            import json

            n = json.loads((out / "manifest.json").read_text())["images"]
            total_n += n
            rows.append((name, n, dt))
            print(f"{name}: {n} images in {dt:.1f} s ({n / dt:.0f} img/s)", file=sys.stderr, flush=True)
            if not args.keep:
                shutil.rmtree(out)
    finally:
        if not args.keep and not args.out:
            shutil.rmtree(parent, ignore_errors=True)
    total = time.perf_counter() - t_all
    cpu = {name: cpu_cost(name, args.cpu_sample) for name, _, _ in rows}
    base1 = baseline()
    load1 = os.getloadavg()
    print("| dataset | images | wall s | images/s | CPU ms/image (items + render) | projected s, 2 idle cores |\n"
          "|---|---:|---:|---:|---:|---:|")
    proj_total = 0.0
    for name, n, dt in rows:
        items_s, render_ms = cpu[name]
        proj = items_s + render_ms * n / 1000 / 2
        proj_total += proj
        print(f"| {name} | {n:,} | {dt:.1f} | {n / dt:.0f} | {1000 * items_s / n + render_ms:.1f} | {proj:.1f} |")
    print(f"| **total** | **{total_n:,}** | **{total:.1f}** | **{total_n / total:.0f}** | | **{proj_total:.0f}** |")
    print(f"\nworkers={args.workers}; output {'RAM (/dev/shm)' if not args.out else args.out}; "
          f"load average before {load0[0]:.1f}, after {load1[0]:.1f} (1 min); "
          f"baseline (500 PNG encodes) {base0:.2f} s before, {base1:.2f} s after; "
          f"total / mean baseline = {total / ((base0 + base1) / 2):.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

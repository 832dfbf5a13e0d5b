"""Speed of the zero-shot methods (issue 16).

Diffusion: seconds per image per class of the diffusion classifier on the tiny test model
(eval/diffusion_tiny.py), its UNet FLOPs per evaluation, and the FLOPs of Stable Diffusion 2.0 base's UNet
(64x64x4 latents, counted on the meta device: no weights needed). ``--sd2-forward`` times one real SD
2.0-sized UNet forward (random weights: the time does not depend on them), from which the time per image
per class follows (samples x that time).

VLM: requests per second through the real OpenAI SDK against the local fake server answering instantly,
at concurrency 1 (baseline) and 8, then the fully cached re-run (must send zero requests).

    .venv/bin/python benchmarks/zeroshot.py [--samples 50] [--images 8] [--requests 200] [--sd2-forward] [--threads 1]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SD2_UNET = dict(sample_size=64, in_channels=4, out_channels=4, layers_per_block=2,
                block_out_channels=(320, 640, 1280, 1280), attention_head_dim=(5, 10, 20, 20),
                cross_attention_dim=1024, use_linear_projection=True,
                down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
                up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3)  # stable-diffusion-2-base unet/config.json


def unet_flops(unet, latent: tuple, text: tuple) -> float:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    dev = next(unet.parameters()).device
    x = torch.zeros((1, *latent), device=dev)
    t = torch.tensor([500], device=dev)
    e = torch.zeros((1, *text), device=dev)
    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        unet(x, t, encoder_hidden_states=e)
    return float(fc.get_total_flops())


def bench_diffusion(samples: int, images: int, sd2_forward: bool, threads: int | None) -> None:
    import torch
    from diffusers import UNet2DConditionModel

    from eval.diffusion import DiffusionConfig, classify_images, load_diffusion
    from eval.diffusion_tiny import TOY_PROMPTS, build_tiny, write_toy_dataset

    if threads:
        torch.set_num_threads(threads)
    print(f"torch threads {torch.get_num_threads()}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as d:
        build_tiny(Path(d) / "m", steps=0)
        write_toy_dataset(Path(d) / "data", images, seed=1)
        model = load_diffusion(str(Path(d) / "m"))
        paths = sorted(str(p) for p in (Path(d) / "data").rglob("*.png"))
        cfg = DiffusionConfig(prompts=TOY_PROMPTS, samples=(samples,), batch_size=32)
        classify_images(model, paths[:1], list(TOY_PROMPTS.values()), cfg, seed=0)  # warm-up
        t0 = time.perf_counter()
        res = classify_images(model, paths, list(TOY_PROMPTS.values()), cfg, seed=0)
        sec = time.perf_counter() - t0
        evals = sum(r.unet_evals for r in res)
        per_eval = sec / evals
        tiny_flops = unet_flops(model.unet, (4, 8, 8), (16, 32))
    print(f"tiny model: {images} images x 2 classes x {samples} samples = {evals} UNet evaluations in {sec:.2f} s")
    print(f"  {sec / images / 2:.3f} s per image per class; {per_eval * 1e3:.2f} ms per UNet evaluation "
          f"(batch 32); {tiny_flops / 1e6:.1f} MFLOP per evaluation -> {tiny_flops / per_eval / 1e9:.2f} GFLOP/s")
    with torch.device("meta"):
        sd2 = UNet2DConditionModel(**SD2_UNET)
    sd2_flops = unet_flops(sd2, (4, 64, 64), (77, 1024))
    n_params = sum(p.numel() for p in sd2.parameters())
    print(f"SD 2.0 base UNet: {n_params / 1e6:.0f} M parameters, {sd2_flops / 1e9:.0f} GFLOP per evaluation "
          f"({sd2_flops / tiny_flops:.0f}x the tiny model, whose time is overhead, not arithmetic: time it with "
          "--sd2-forward)")
    if sd2_forward:
        unet = UNet2DConditionModel(**SD2_UNET).eval()
        unet_flops(unet, (4, 64, 64), (77, 1024))  # warm-up
        t0 = time.perf_counter()
        with torch.no_grad():
            unet(torch.zeros(1, 4, 64, 64), torch.tensor([500]), encoder_hidden_states=torch.zeros(1, 77, 1024))
        real = time.perf_counter() - t0
        print(f"  measured: one SD 2.0-sized UNet forward (random weights, batch 1) {real:.1f} s "
              f"-> {real * samples / 60:.1f} min per image per class at {samples} samples")


def bench_vlm(n: int) -> None:
    import numpy as np
    import pandas as pd

    from eval.tasks import load_task
    from eval.vlm import RequestSettings, VLMConfig, run_vlm
    from eval.vlm.fake_server import FakeVLMServer
    from infra.images import save_png

    os.environ.setdefault("OPENAI_API_KEY", "benchmark-key")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "build"
        (root / "img").mkdir(parents=True)
        rng = np.random.default_rng(0)
        rows = []
        for i in range(40 + n):
            f = f"img/{i:04d}.png"
            save_png(root / f, rng.integers(0, 255, (32, 32, 3), dtype=np.uint8))
            rows.append(dict(file_name=f, split="train" if i < 40 else "test", vpt_label=i % 2, depth_label=i % 2,
                             in_vpt=True, in_depth=True, in_human=False, in_strategy=False, scene=f"s{i}", setting=0))
        pd.DataFrame(rows).to_parquet(root / "metadata.parquet")
        (root / "manifest.json").write_text("{}")
        task = load_task(root, "vpt")
        with FakeVLMServer() as srv:
            rates = {}
            for conc in (1, 8):
                st = RequestSettings(base_url=srv.openai_base, cache_dir=str(Path(d) / f"cache{conc}"), concurrency=conc)
                before = srv.count()
                t0 = time.perf_counter()
                run_vlm(task, "openai:fake", VLMConfig(n_boot=200), Path(d) / f"res{conc}", st, progress=False)
                sec = time.perf_counter() - t0
                rates[conc] = (srv.count() - before) / sec
                print(f"VLM concurrency {conc}: {srv.count() - before} requests (20 in-context images each) in "
                      f"{sec:.2f} s = {rates[conc]:.1f} requests/s (whole run: building requests, parsing, writing)")
            before = srv.count()
            t0 = time.perf_counter()
            st = RequestSettings(base_url=srv.openai_base, cache_dir=str(Path(d) / "cache8"), concurrency=8)
            run_vlm(task, "openai:fake", VLMConfig(n_boot=200), Path(d) / "res_cached", st, progress=False)
            print(f"cached re-run: {srv.count() - before} requests in {time.perf_counter() - t0:.2f} s; "
                  f"concurrency 8 / 1 = {rates[8] / rates[1]:.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--images", type=int, default=8)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--sd2-forward", action="store_true")
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    ap.add_argument("--only", choices=("diffusion", "vlm"), default=None)
    a = ap.parse_args()
    if a.only in (None, "vlm"):
        bench_vlm(a.requests)
    if a.only in (None, "diffusion"):
        bench_diffusion(a.samples, a.images, a.sd2_forward, a.threads)


if __name__ == "__main__":
    main()

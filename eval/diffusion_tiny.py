"""A tiny Stable-Diffusion-shaped model built from configs in code, and a toy two-class image set to train it
on: what the diffusion classifier's tests and benchmark use, since no pretrained weights can be downloaded.

The model has the real Stable Diffusion component types (``UNet2DConditionModel``, ``AutoencoderKL``,
``CLIPTextModel`` + ``CLIPTokenizer``, a scaled-linear DDPM schedule with SD's betas) at toy sizes: 16x16
RGB images, 8x8x4 latents, a 32-wide text encoder. The tokenizer is byte-level with no BPE merges (every
word splits into characters), written as files so the model saves and loads like any diffusers folder.
Only the UNet is trained (the random VAE encoder and text encoder are frozen): the classifier needs the
denoiser to depend on the prompt, nothing more.

Toy classes (:func:`toy_images`): ``disc`` = a red disc, ``square`` = a blue square, on a grey background of
random level, random centre and size; prompts ``"a red disc"`` / ``"a blue square"``.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

TOY_CLASSES = ("disc", "square")
TOY_PROMPTS = {"disc": "a red disc", "square": "a blue square"}
TINY_IMAGE = 16
TINY_TEXT_LEN = 16


def _byte_unicode() -> list[str]:
    """CLIP's byte -> printable unicode table (GPT-2's ``bytes_to_unicode``), in byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


def write_tiny_tokenizer(folder: Path):
    """A byte-level CLIP tokenizer without merges (vocab: every byte character, alone and word-final, plus
    the start/end tokens), saved in ``folder``; returns it."""
    from transformers import CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    chars = _byte_unicode()
    vocab = {t: i for i, t in enumerate(["<|startoftext|>", "<|endoftext|>"] + chars + [c + "</w>" for c in chars])}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tok = CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=TINY_TEXT_LEN)
    tok.save_pretrained(folder)
    return tok


def tiny_components(seed: int = 0) -> dict:
    """Random tiny ``unet``, ``vae``, ``text_encoder`` and ``scheduler`` (seeded)."""
    import torch
    from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        sample_size=TINY_IMAGE // 2, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(16, 32),
        down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32, attention_head_dim=8,
        norm_num_groups=8)
    vae = AutoencoderKL(in_channels=3, out_channels=3, block_out_channels=(16, 32), latent_channels=4,
                        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                        norm_num_groups=8, sample_size=TINY_IMAGE)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        vocab_size=514, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=TINY_TEXT_LEN, bos_token_id=0, eos_token_id=1, pad_token_id=1))
    scheduler = DDPMScheduler(num_train_timesteps=1000, beta_schedule="scaled_linear", beta_start=0.00085,
                              beta_end=0.012)  # Stable Diffusion's training schedule
    return {"unet": unet, "vae": vae, "text_encoder": text_encoder, "scheduler": scheduler}


def toy_images(n: int, rng: np.random.Generator, classes=TOY_CLASSES) -> tuple[np.ndarray, np.ndarray]:
    """``n`` images uint8 [n, 16, 16, 3] and their class indices int64 [n] (alternating, so balanced):
    a red disc (class 0) or a blue square (class 1), radius / half-side 3-5 px, on grey 0.3-0.7."""
    size = TINY_IMAGE
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    labels = np.arange(n) % len(classes)
    out = np.empty((n, size, size, 3), np.uint8)
    for j, c in enumerate(labels):
        cx, cy = rng.uniform(5, 11, 2)
        r = rng.uniform(3, 5)
        im = np.full((size, size, 3), rng.uniform(0.3, 0.7))
        if c == 0:
            im[(xx - cx) ** 2 + (yy - cy) ** 2 < r * r] = (0.9, 0.1, 0.1)
        else:
            im[(np.abs(xx - cx) < r) & (np.abs(yy - cy) < r)] = (0.1, 0.1, 0.9)
        out[j] = np.round(im * 255)
    return out, labels.astype(np.int64)


def train_tiny(components: dict, tokenizer, steps: int = 200, batch: int = 16, lr: float = 2e-3, seed: int = 0,
               threads: int = 1) -> dict:
    """Train the UNet of ``components`` on :func:`toy_images` with the class prompts (noise-prediction MSE,
    uniform t, AdamW); returns ``{"seconds", "final_loss", "steps"}``. One intra-op thread by default: the
    ops are tiny and a second thread mostly waits on a shared machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        unet, vae, te, sch = (components[k] for k in ("unet", "vae", "text_encoder", "scheduler"))
        vae.requires_grad_(False)
        te.requires_grad_(False)
        ids = tokenizer([TOY_PROMPTS[c] for c in TOY_CLASSES], padding="max_length", max_length=TINY_TEXT_LEN,
                        truncation=True, return_tensors="pt").input_ids
        with torch.no_grad():
            emb = te(ids)[0]
            imgs, labels = toy_images(512, rng)  # a fixed pool, encoded once
            x = torch.from_numpy(imgs).permute(0, 3, 1, 2).float() / 127.5 - 1.0
            mean = vae.encode(x).latent_dist.mean
            # Stable Diffusion's scaling factor (0.18215) gives its trained VAE's latents unit variance; the
            # random tiny VAE gets the factor that does the same for the toy images
            vae.register_to_config(scaling_factor=float(1.0 / mean.std()))
            lat = mean * vae.config.scaling_factor
        lab = torch.from_numpy(labels)
        opt = torch.optim.AdamW(unet.parameters(), lr=lr)
        unet.train()
        t0, loss = time.perf_counter(), float("nan")
        for _ in range(steps):
            j = torch.randint(0, len(lat), (batch,))
            t = torch.randint(0, sch.config.num_train_timesteps, (batch,))
            eps = torch.randn_like(lat[j])
            pred = unet(sch.add_noise(lat[j], eps, t), t, encoder_hidden_states=emb[lab[j]]).sample
            lo = torch.nn.functional.mse_loss(pred, eps)
            opt.zero_grad(set_to_none=True)
            lo.backward()
            opt.step()
            loss = float(lo.detach())
        unet.eval()
        return {"seconds": time.perf_counter() - t0, "final_loss": loss, "steps": steps}
    finally:
        torch.set_num_threads(before)


def save_tiny(components: dict, folder: Path) -> Path:
    """Save the components as a diffusers Stable-Diffusion-style folder (``diffusion:<folder>``)."""
    folder = Path(folder)
    for name in ("unet", "vae", "text_encoder", "scheduler"):
        components[name].save_pretrained(folder / name)
    write_tiny_tokenizer(folder / "tokenizer")
    return folder


def build_tiny(folder: Path, steps: int = 150, seed: int = 0) -> dict:
    """Build, train (``steps`` > 0) and save a tiny model in ``folder``; returns the training facts."""
    from transformers import CLIPTokenizer

    folder = Path(folder)
    comps = tiny_components(seed)
    tok = write_tiny_tokenizer(folder / "tokenizer")
    facts = train_tiny(comps, CLIPTokenizer.from_pretrained(folder / "tokenizer"), steps=steps, seed=seed) \
        if steps > 0 else {"seconds": 0.0, "final_loss": float("nan"), "steps": 0}
    del tok
    save_tiny(comps, folder)
    return facts


def write_toy_dataset(root: Path, n: int, seed: int) -> Path:
    """``n`` toy images as an ImageFolder ``root/test/<class>/<i>.png`` (the classifier's held-out set)."""
    from infra.images import save_png

    imgs, labels = toy_images(n, np.random.default_rng(seed))
    for i, (im, c) in enumerate(zip(imgs, labels)):
        d = Path(root) / "test" / TOY_CLASSES[c]
        d.mkdir(parents=True, exist_ok=True)
        save_png(d / f"{i:04d}.png", im)
    return Path(root)

"""Zero-shot classification with a text-conditioned latent diffusion model (Li et al. 2023, "Your diffusion
model is secretly a zero-shot classifier", ICCV; used on Stable Diffusion 2.0 by the 3D-PC paper, app. A.7).

For an image x and class prompts c_1..c_k the classifier estimates, per class,

    err_k = E_{t, eps} [ w_t * || eps - eps_theta(x_t, t, c_k) ||^2 ],   x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) eps

where x0 is the VAE latent mean of the image times the VAE's ``scaling_factor`` and the expectation is a mean
over a fixed set of (t, eps) samples **shared by every class** (paired differences: the class ranking does
not carry the noise of independent draws) and by every image of a run. The predicted class has the lowest
error. Conventions:

* **Timesteps** (the rule of Li et al.'s code, ``eval_prob_adaptive.py``): a lattice of M = max(samples)
  points ``range(T // M // 2, T, T // M)[:M]`` (T = the scheduler's ``num_train_timesteps``, 1000 for Stable
  Diffusion); lattice point i always gets noise ``eps_i``. Noise is ``torch.randn((M, C, h, w),
  generator=Generator().manual_seed(seed))`` on the CPU: same seed -> same samples -> same predictions, on
  any device. (Li et al. index their noise tensor by evaluation order instead; both are i.i.d. draws, only
  which draw meets which timestep differs.)
* **Adaptive rounds** (Li et al. section 3.2): stage s takes the lattice points ``lattice[M // n // 2 :: M // n][:n]``
  with n = ``samples[s]`` (centred in the lattice: for the paper's schedule, T = 1000, samples (50, 500),
  stage 1 evaluates t = 11, 31, ..., 991 and stage 2 the other 450 of 1, 3, ..., 999), skips those already
  evaluated, evaluates the rest for every class still in contention, ranks the classes by their mean error
  over all their evaluated samples and keeps the best ``keep[s]``. The last stage keeps one. As in Li et
  al.'s code, the stages' point sets need not nest (samples (10, 20, 40): 10, then 20 new, then 10 new), so
  a class's count by the end of a stage is the size of the union; it is ``samples[s]`` when they nest, as in
  the paper's Stable Diffusion schedule for many classes, keep (5, 1), samples (50, 500).
* **Prompts** are encoded as Stable Diffusion does (padded and cut to the text encoder's context, 77 tokens
  for CLIP). A prompt longer than that is cut with a warning; two classes whose prompts are identical, or
  become identical token lists once cut, are an error (:class:`DiffusionError`) before any image is
  evaluated: the classifier could not tell them apart and would pick the lower class index every time.
* **Error**: ``loss=l2`` mean squared error over latent elements (Li et al.'s choice), ``l1`` mean absolute
  error; ``weighting=uniform`` (Li et al.: the simple, unweighted objective worked best) or ``elbo`` (the
  DDPM variational bound's weight beta_t / (2 alpha_t (1 - abar_t)), normalised over the evaluated samples).
* **Score** (the trial table's probability of the response): a softmax of ``-D * err`` over the classes of
  the last stage, D = the number of latent elements (so ``D * err`` is the summed squared error of the
  paper's Bayes-rule posterior, eq. 5); classes pruned earlier get 0. It saturates quickly: use it to rank,
  not as a calibrated probability.

Every run records the schedule, the weighting, the loss and the mean number of UNet evaluations per image
in its summary row, and a per-(image, class) table ``diffusion/<run_id>.parquet`` in the results folder
(prompt, samples evaluated, mean error, stage at which the class left).

Model ids: ``diffusion:<folder>`` — a diffusers Stable-Diffusion-style folder (``unet/``, ``vae/``,
``text_encoder/``, ``tokenizer/``, ``scheduler/``), or a hub id found in the local hub cache.
Default prompts: the 3D-PC paper's best prompts (appendix A.7) for ``vpt``/``vpt_strategy`` and
``depth``; any other task takes ``prompts`` (class -> prompt) or ``template`` (e.g. ``a photo of a {class}``).
"""
from __future__ import annotations

import hashlib
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from infra import schema as S

from .runner import Method, SeedResult, register_method

log = logging.getLogger(__name__)

# 3D-PC appendix A.7, verbatim ("the prompt ... for positive class and ... for the negative class"). Class names
# are the build's label polarity: vpt 1 = the observer sees the ball; depth 1 = the ball is further than the
# observer, i.e. the green arrow is closer to the viewing camera (the paper's positive depth class).
THREEDPC_PROMPTS: dict[str, dict[str, str]] = {
    "vpt": {"1": "A photo with red ball is visible from the green arrow's perspective",
            "0": "A photo with red ball not visible from the green arrow's perspective"},
    "depth": {"1": "A photo with green arrow closer to the camera as compared to red ball",
              "0": "A photo with red ball closer to the camera as compared to green arrow"},
}
THREEDPC_PROMPTS["vpt_strategy"] = THREEDPC_PROMPTS["vpt"]
WEIGHTINGS = ("uniform", "elbo")
LOSSES = ("l2", "l1")


class DiffusionError(S.ConfigError):
    """A diffusion model folder, prompt set or schedule that cannot be used (a :class:`infra.schema.ConfigError`:
    settings are checked by the one validator and re-raised as this class)."""


@dataclass(frozen=True)
class DiffusionConfig:
    """Settings of the diffusion classifier (module docstring). ``keep`` and ``samples`` are the adaptive
    schedule, one entry per stage; ``image_size`` None = the UNet's sample size times the VAE's factor.
    Declared and checked with ``infra.schema`` (errors name ``diffusion.<field>``)."""

    prompts: dict | None = S.field(None, "{class name: prompt}; None = 3D-PC paper prompts (vpt, depth) or the template")
    template: str | None = S.field(None, "e.g. 'a photo of a {class}' (quote it on the command line)",
                                   check=(lambda v: "{class}" in v, "a string containing {class}"))
    keep: tuple[int, ...] = S.field((1,), "classes kept after each stage (Li et al. used [5, 1] for many classes)",
                                    check=(lambda v: len(v) >= 1 and v[-1] == 1 and all(k >= 1 for k in v)
                                           and all(a > b for a, b in zip(v, v[1:])),
                                           "a strictly decreasing list ending in 1, e.g. [5, 1]"))
    samples: tuple[int, ...] = S.field((50,), "(t, eps) samples per class by the end of each stage (Li et al.: "
                                       "[50, 500])")
    weighting: str = S.field("uniform", "uniform (paper) or elbo", choices=WEIGHTINGS)
    loss: str = S.field("l2", "l2 or l1", choices=LOSSES)
    image_size: int | None = S.field(None, "None = the model's native size (SD 2.0 base: 512)",
                                     check=(lambda v: v >= 8, "null or >= 8 pixels"))
    batch_size: int = S.field(32, "UNet evaluations per forward pass", check=S.at_least(1))
    seeds: tuple[int, ...] = S.field((0,), "each seed draws its own shared noise set",
                                     check=S.non_empty("at least one seed"))
    n_boot: int = S.field(10_000, "bootstrap resamples of the CIs", check=S.at_least(100))
    ci: float = S.field(0.95, "confidence level", check=S.between(0, 1, "()"))

    def __post_init__(self):
        object.__setattr__(self, "keep", tuple(int(k) for k in self.keep))
        object.__setattr__(self, "samples", tuple(int(s) for s in self.samples))
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        if isinstance(self.prompts, dict):  # anything else is named by validate_section below
            object.__setattr__(self, "prompts", {str(k): str(v) for k, v in self.prompts.items()})
        try:
            S.validate_section(self, "diffusion")
            if not (len(self.samples) == len(self.keep) and all(s >= 1 for s in self.samples)
                    and all(a <= b for a, b in zip(self.samples, self.samples[1:]))):
                raise S.not_allowed("diffusion.samples", self.samples, f"one count >= 1 per stage of "
                                    f"keep={list(self.keep)}, non-decreasing, e.g. [50, 500]")
        except S.ConfigError as e:
            raise DiffusionError(str(e)) from None

    def schedule_text(self) -> str:
        return f"keep={','.join(map(str, self.keep))};samples={','.join(map(str, self.samples))}"


# ----------------------------------------------------------------------------------------------- prompts
def class_prompts(task, cfg: DiffusionConfig) -> list[str]:
    """One prompt per ``task.classes`` entry: ``cfg.prompts`` (class name -> prompt), else ``cfg.template``
    with ``{class}`` replaced, else the 3D-PC defaults for a 3D-PC target; otherwise an error naming the fix."""
    classes = list(task.classes)
    if cfg.prompts is not None:
        missing = [c for c in classes if c not in cfg.prompts]
        extra = sorted(set(cfg.prompts) - set(classes))
        if missing or extra:
            raise DiffusionError(f"diffusion.prompts: needs exactly the task's classes {classes} as keys "
                                 f"(missing {missing}, unknown {extra})")
        prompts, where = [cfg.prompts[c] for c in classes], "diffusion.prompts"
    elif cfg.template is not None:
        prompts, where = [cfg.template.replace("{class}", c) for c in classes], "diffusion.template"
    else:
        target = task.name.split("/", 1)[-1]
        if getattr(task, "kind", "") != "threedpc" or target not in THREEDPC_PROMPTS:
            raise DiffusionError(f"task {task.name}: no default prompts; set diffusion.template='a photo of a {{class}}' "
                                 f"or diffusion.prompts={{{', '.join(f'{c}: ...' for c in classes[:3])}}} for classes "
                                 f"{classes}")
        prompts, where = [THREEDPC_PROMPTS[target][c] for c in classes], "the 3D-PC prompts"
    _refuse_identical(classes, [(p,) for p in prompts], prompts, f"are identical ({where})")
    return prompts


def check_schedule(cfg: DiffusionConfig, n_classes: int, num_train_timesteps: int | None = None) -> None:
    """The adaptive schedule against the task (``n_classes``) and the model (``num_train_timesteps`` T, when
    known): a first stage that keeps every class prunes nothing (``keep=[5, 1]`` with 2 classes is a
    mistyped schedule), and the lattice has at most T points."""
    if len(cfg.keep) > 1 and cfg.keep[0] >= n_classes:
        raise DiffusionError(f"diffusion.keep={list(cfg.keep)}: the first stage keeps {cfg.keep[0]} of the task's "
                             f"{n_classes} classes, so it prunes nothing; use fewer stages (e.g. diffusion.keep=[1] "
                             f"diffusion.samples=[{cfg.samples[-1]}]) or keep fewer than {n_classes}")
    if num_train_timesteps is not None and max(cfg.samples) > num_train_timesteps:
        raise DiffusionError(f"diffusion.samples={list(cfg.samples)}: at most {num_train_timesteps} samples per class "
                             "(one per timestep of the model's noise schedule)")


def _refuse_identical(classes: list[str], keys: list, prompts: list[str], why: str) -> None:
    seen: dict = {}
    for c, k, p in zip(classes, keys, prompts):
        if k in seen:
            raise DiffusionError(f"diffusion prompts of classes {seen[k][0]!r} and {c!r} {why}: {seen[k][1]!r} vs "
                                 f"{p!r}; the classifier cannot tell such classes apart. Give prompts that differ "
                                 "(within the text encoder's context)")
        seen[k] = (c, p)


def check_prompt_tokens(model: "DiffusionModel", prompts: list[str], classes: list[str] | None = None,
                        warn: bool = True) -> None:
    """Refuse prompts that become identical token lists once cut to the text encoder's context (the
    tokenizer's ``model_max_length``, 77 for CLIP); with ``warn``, log each prompt that is cut and how many
    of its tokens are lost."""
    tok = model.tokenizer
    n = int(tok.model_max_length)
    classes = list(classes) if classes is not None else [str(i) for i in range(len(prompts))]
    cut = tok(prompts, padding="max_length", max_length=n, truncation=True)["input_ids"]
    if warn:
        full = tok(prompts, truncation=False, verbose=False)["input_ids"]
        for c, p, ids in zip(classes, prompts, full):
            if len(ids) > n:
                log.warning("diffusion prompt of class %r is %d tokens, cut to the text encoder's %d: %r loses its "
                            "last %d tokens", c, len(ids), n, p, len(ids) - n)
    _refuse_identical(classes, [tuple(ids) for ids in cut], prompts,
                      f"become the same tokens once cut to the text encoder's context of {n} tokens")


# ------------------------------------------------------------------------------------------------- model
@dataclass
class DiffusionModel:
    """The components the classifier uses (diffusers/transformers modules in eval mode, frozen)."""

    unet: object
    vae: object
    text_encoder: object
    tokenizer: object
    alphas_cumprod: np.ndarray  # [T] float64, abar_t of the training noise schedule
    scaling_factor: float
    image_size: int  # native pixel size: unet.sample_size * VAE downsampling factor
    weights: str  # identity for the trial table (``file:sha256=...`` of the folder's files)
    source: str = ""

    @property
    def num_train_timesteps(self) -> int:
        return len(self.alphas_cumprod)


def parse_model_id(model: str) -> str:
    """``diffusion:<folder or hub id>`` -> the folder or hub id."""
    prefix, _, rest = str(model).partition(":")
    if prefix != "diffusion" or not rest:
        raise DiffusionError(f"model={model!r}: expected diffusion:<folder of a Stable-Diffusion-style model> "
                             "(unet/, vae/, text_encoder/, tokenizer/, scheduler/)")
    return rest


def folder_digest(folder: Path) -> str:
    """sha256 over (relative path, sha256 of contents) of every file of a model folder, sorted."""
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file() and not q.name.startswith(".")):
        fh = hashlib.sha256()
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                fh.update(chunk)
        h.update(f"{p.relative_to(folder).as_posix()}\0{fh.hexdigest()}\n".encode())
    return h.hexdigest()


def scheduler_timesteps(source: str) -> int | None:
    """T of a local model folder read from ``scheduler/scheduler_config.json`` alone (no weights loaded), so that a
    schedule longer than the model's noise schedule fails in well under a second instead of after the model
    loads; None when the folder, the file or the field is absent or unreadable (the loaded model then decides:
    ``DiffusionMethod`` checks against its ``alphas_cumprod``)."""
    import json

    path = Path(source) / "scheduler" / "scheduler_config.json"
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    betas = d.get("trained_betas") if isinstance(d, dict) else None
    if isinstance(betas, list) and betas:
        return len(betas)
    t = d.get("num_train_timesteps") if isinstance(d, dict) else None
    return t if isinstance(t, int) and not isinstance(t, bool) and t > 0 else None


def load_diffusion(source: str, device: str = "cpu") -> DiffusionModel:
    """The components of a diffusers Stable-Diffusion-style model from a local folder (or a hub id already in
    the local cache; nothing is downloaded)."""
    from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
    from transformers import CLIPTextModel, CLIPTokenizer

    folder = Path(source)
    local = folder.is_dir()
    if not local and (folder.is_absolute() or source.startswith((".", "~")) or folder.exists()):
        raise DiffusionError(f"model=diffusion:{source}: no such folder (expected a diffusers Stable-Diffusion-style "
                             "model folder with unet/, vae/, text_encoder/, tokenizer/, scheduler/)")
    if local:
        missing = [s for s in ("unet", "vae", "text_encoder", "tokenizer", "scheduler") if not (folder / s).is_dir()]
        if missing:
            raise DiffusionError(f"model folder {folder}: missing sub-folder(s) {missing}; expected a diffusers "
                                 "Stable Diffusion layout (save_pretrained of a StableDiffusionPipeline)")
    kw = {"local_files_only": True}
    try:
        unet = UNet2DConditionModel.from_pretrained(source, subfolder="unet", **kw)
        vae = AutoencoderKL.from_pretrained(source, subfolder="vae", **kw)
        text_encoder = CLIPTextModel.from_pretrained(source, subfolder="text_encoder", **kw)
        tokenizer = CLIPTokenizer.from_pretrained(source, subfolder="tokenizer", **kw)
        # any SD scheduler config (PNDM, DDIM, ...) describes the same training betas; DDPM's reads them
        scheduler = DDPMScheduler.from_pretrained(source, subfolder="scheduler", **kw)
    except (OSError, ValueError, EnvironmentError) as e:
        where = f"folder {folder}" if local else f"hub id {source!r} (not in the local hub cache; no downloads)"
        raise DiffusionError(f"model={source}: cannot load a Stable-Diffusion-style model from {where}: "
                             f"{' '.join(str(e).split())}") from None
    for m in (unet, vae, text_encoder):
        m.eval().requires_grad_(False).to(device)
    factor = 2 ** (len(vae.config.block_out_channels) - 1)
    weights = f"file:sha256={folder_digest(folder)[:16]}" if local else f"pretrained:{source}"
    return DiffusionModel(unet, vae, text_encoder, tokenizer,
                          scheduler.alphas_cumprod.double().numpy().astype(np.float64),
                          float(vae.config.scaling_factor), int(unet.config.sample_size) * factor, weights, source)


def encode_prompts(model: DiffusionModel, prompts: list[str]):
    """Text embeddings [k, L, d] (padded to the tokenizer's maximum length, as Stable Diffusion encodes)."""
    import torch

    check_prompt_tokens(model, prompts, warn=False)
    tok = model.tokenizer(prompts, padding="max_length", max_length=model.tokenizer.model_max_length,
                          truncation=True, return_tensors="pt")
    dev = next(model.text_encoder.parameters()).device
    with torch.no_grad():
        return model.text_encoder(tok.input_ids.to(dev))[0]


def preprocess_image(path: str, size: int):
    """Image file -> float32 tensor [3, size, size] in [-1, 1]: shorter side resized to ``size`` (bicubic),
    centre crop (Li et al.'s transform)."""
    import torch
    from PIL import Image

    from infra.images import read_image

    im = read_image(path)
    w, h = im.size
    s = size / min(w, h)
    im = im.resize((max(size, round(w * s)), max(size, round(h * s))), Image.BICUBIC)
    w, h = im.size
    left, top = (w - size) // 2, (h - size) // 2
    a = np.asarray(im.crop((left, top, left + size, top + size)), dtype=np.float32) / 255.0
    return torch.from_numpy(a).permute(2, 0, 1) * 2.0 - 1.0


def encode_images(model: DiffusionModel, images):
    """Pixel tensors [B, 3, H, W] in [-1, 1] -> latents [B, C, h, w] (latent mean x scaling factor)."""
    import torch

    dev = next(model.vae.parameters()).device
    with torch.no_grad():
        return model.vae.encode(images.to(dev)).latent_dist.mean * model.scaling_factor


# -------------------------------------------------------------------------------------------- classifier
def timestep_lattice(T: int, m: int) -> np.ndarray:
    """``m`` evenly spaced timesteps in [0, T): ``range(T // m // 2, T, T // m)[:m]`` (Li et al.)."""
    if not 1 <= m <= T:
        raise DiffusionError(f"diffusion.samples: at most {T} samples (the model's timesteps), got {m}")
    return np.arange(T // m // 2, T, T // m)[:m]


def stage_indices(n_stage: int, m: int) -> list[int]:
    """Lattice indices of a stage with ``n_stage`` samples out of the ``m``-point lattice: every ``m // n_stage``-th
    point starting at ``m // n_stage // 2`` (centred), the first ``n_stage`` of them (Li et al.'s rule)."""
    if not 1 <= n_stage <= m:
        raise DiffusionError(f"diffusion.samples: a stage of {n_stage} samples out of {m}; each stage needs 1..{m}")
    step = m // n_stage
    return list(range(step // 2, m, step))[:n_stage]


def timestep_weights(alphas_cumprod: np.ndarray, ts: np.ndarray, weighting: str) -> np.ndarray:
    """Weight per timestep: 1 (``uniform``) or the DDPM ELBO weight beta_t / (2 alpha_t (1 - abar_t))."""
    if weighting == "uniform":
        return np.ones(len(ts))
    abar = alphas_cumprod
    prev = np.concatenate([[1.0], abar[:-1]])
    alpha = abar / prev
    beta = 1.0 - alpha
    return (beta / (2.0 * alpha * (1.0 - abar)))[ts]


def make_noise(seed: int, m: int, shape: tuple[int, ...]):
    """The shared noise samples [m, *shape] float32, drawn on the CPU from ``seed``."""
    import torch

    return torch.randn((m, *shape), generator=torch.Generator().manual_seed(int(seed)), dtype=torch.float32)


@dataclass
class ImageResult:
    """One image's classification: the chosen class index, score, and per class the samples evaluated,
    mean (weighted) error and the stage it left at (-1 = survived)."""

    choice: int
    score: float
    n_samples: np.ndarray
    errors: np.ndarray
    left_at: np.ndarray
    unet_evals: int = 0


def classify_latent(model: DiffusionModel, x0, text_emb, noise, cfg: DiffusionConfig) -> ImageResult:
    """Classify one image latent ``x0`` [C, h, w] among the prompts of ``text_emb`` [k, L, d] with the shared
    ``noise`` [M, C, h, w] (module docstring: lattice, adaptive rounds, weighting)."""
    import torch

    k = text_emb.shape[0]
    m = noise.shape[0]
    ts = timestep_lattice(model.num_train_timesteps, m)
    w = timestep_weights(model.alphas_cumprod, ts, cfg.weighting)
    abar = torch.from_numpy(model.alphas_cumprod[ts]).float()
    dev = x0.device
    errs = np.full((k, m), np.nan)  # per (class, lattice sample) unweighted error
    alive = list(range(k))
    left_at = np.full(k, -1)
    evals = 0
    for stage, (keep, n) in enumerate(zip(cfg.keep, cfg.samples)):
        todo = [(c, i) for c in alive for i in stage_indices(n, m) if np.isnan(errs[c, i])]
        for b in range(0, len(todo), cfg.batch_size):
            chunk = todo[b:b + cfg.batch_size]
            cs = [c for c, _ in chunk]
            ii = torch.tensor([i for _, i in chunk])
            eps = noise[ii].to(dev)
            a = abar[ii].to(dev).view(-1, 1, 1, 1)
            xt = a.sqrt() * x0.unsqueeze(0) + (1.0 - a).sqrt() * eps
            t = torch.from_numpy(ts[ii.numpy()]).to(dev)
            with torch.no_grad():
                pred = model.unet(xt, t, encoder_hidden_states=text_emb[cs]).sample
            d = pred.float() - eps
            e = (d.square() if cfg.loss == "l2" else d.abs()).mean(dim=(1, 2, 3)).cpu().double().numpy()
            for (c, i), v in zip(chunk, e):
                errs[c, i] = v
            evals += len(chunk)
        means = _weighted_means(errs, w)
        if len(alive) > keep:
            order = sorted(alive, key=lambda c: (means[c], c))  # ties -> lower class index (deterministic)
            for c in order[keep:]:
                left_at[c] = stage
            last_stage = alive
            alive = order[:keep]
        else:
            last_stage = alive
    means = _weighted_means(errs, w)
    choice = alive[0]
    d_elems = int(np.prod(x0.shape))
    logits = np.array([-d_elems * means[c] for c in last_stage])
    p = np.exp(logits - logits.max())
    p /= p.sum()
    score = float(p[last_stage.index(choice)])
    return ImageResult(choice, score, (~np.isnan(errs)).sum(1), means, left_at, evals)


def _weighted_means(errs: np.ndarray, w: np.ndarray) -> np.ndarray:
    have = ~np.isnan(errs)
    num = np.where(have, errs, 0.0) @ w
    den = have.astype(float) @ w
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.inf)


def classify_images(model: DiffusionModel, paths: list[str], prompts: list[str], cfg: DiffusionConfig,
                    seed: int, progress: bool = False, checkpoint: str | Path | None = None) -> list[ImageResult]:
    """:func:`classify_latent` for every image file, with one shared noise set drawn from ``seed``.

    ``checkpoint``: a folder where each image's result is saved as it is finished (``<index>.json``, written
    atomically) and read back on the next call, so an interrupted run resumes at the first unfinished image.
    The caller owns the folder and must key it by everything that determines the results (the run id)."""
    from tqdm.auto import tqdm

    size = cfg.image_size or model.image_size
    emb = encode_prompts(model, prompts)
    out, noise = [], None
    ck = Path(checkpoint) if checkpoint is not None else None
    if ck is not None:
        ck.mkdir(parents=True, exist_ok=True)
    for i, p in enumerate(tqdm(paths, desc="diffusion classifier", unit="image", disable=not progress, leave=False)):
        done = _load_result(ck / f"{i}.json", p) if ck is not None else None
        if done is not None:
            out.append(done)
            continue
        x0 = encode_images(model, preprocess_image(p, size).unsqueeze(0))[0]
        if noise is None or tuple(noise.shape[1:]) != tuple(x0.shape):
            noise = make_noise(seed, max(cfg.samples), tuple(x0.shape))
        r = classify_latent(model, x0, emb, noise, cfg)
        out.append(r)
        if ck is not None:
            _save_result(ck / f"{i}.json", p, r)
    return out


def _save_result(path: Path, image: str, r: ImageResult) -> None:
    import json

    from infra.files import atomic_write_text

    atomic_write_text(path, json.dumps({"image": image, "choice": int(r.choice), "score": r.score,
                                        "n_samples": r.n_samples.tolist(), "errors": r.errors.tolist(),
                                        "left_at": r.left_at.tolist(), "unet_evals": int(r.unet_evals)}))


def _load_result(path: Path, image: str) -> ImageResult | None:
    import json

    try:
        d = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if d.get("image") != image:  # another image list: not ours
        return None
    return ImageResult(int(d["choice"]), float(d["score"]), np.asarray(d["n_samples"]), np.asarray(d["errors"], float),
                       np.asarray(d["left_at"]), int(d["unet_evals"]))


# ------------------------------------------------------------------------------------------------ method
@register_method("diffusion")
class DiffusionMethod(Method):
    """The diffusion zero-shot classifier as an evaluation method (no training; one noise set per seed)."""

    Config = DiffusionConfig
    trains = False
    feature = "zero-shot"

    def __init__(self, task, cfg: DiffusionConfig, model: DiffusionModel, progress: bool = False):
        super().__init__(task, cfg)
        self.model, self.progress = model, progress
        self.prompts = class_prompts(task, cfg)
        # before anything is written: the schedule against this task and model, the prompts against its encoder
        check_schedule(cfg, len(task.classes), model.num_train_timesteps)
        check_prompt_tokens(model, self.prompts, list(task.classes))

    def digest_fields(self) -> dict:
        return {"model_weights": self.model.weights, "prompts": self.prompts}

    def identity(self) -> dict:
        size = self.cfg.image_size or self.model.image_size
        return {"weights": self.model.weights, "preprocess": f"diffusion:{size}:bicubic:center_crop"}

    def run_seed(self, seed: int, rid: str) -> SeedResult:
        from infra.files import temp_name

        items = self.items
        t0 = time.perf_counter()
        partial = Path(self.run.results_dir) / "diffusion" / f"{rid}.partial"  # per-image resume (same run id)
        res = classify_images(self.model, items["path"].tolist(), self.prompts, self.cfg, seed, self.progress,
                              checkpoint=partial)
        seconds = time.perf_counter() - t0
        classes = list(self.task.classes)
        choice = np.array([r.choice for r in res], dtype=int)
        trials = pd.DataFrame({"split": items["split"].to_numpy(), "item_id": items["item_id"].to_numpy(),
                               "label": items["label_name"].to_numpy(),
                               "response": np.asarray(classes, dtype=object)[choice],
                               "score": [r.score for r in res], "correct": choice == items["label"].to_numpy()})
        detail = pd.DataFrame([{"item_id": it, "split": sp, "class": classes[c], "prompt": self.prompts[c],
                                "n_samples": int(r.n_samples[c]), "mean_error": float(r.errors[c]),
                                "left_at_stage": int(r.left_at[c]), "chosen": c == r.choice, "seed": seed,
                                "weighting": self.cfg.weighting, "loss": self.cfg.loss}
                               for it, sp, r in zip(items["item_id"], items["split"], res) for c in range(len(classes))])
        path = Path(self.run.results_dir) / "diffusion" / f"{rid}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_name(path)
        detail.to_parquet(tmp, index=False)
        tmp.replace(path)
        shutil.rmtree(partial, ignore_errors=True)  # the run's parts are about to be written by the runner
        evals = float(np.mean([r.unet_evals for r in res])) if res else 0.0
        return SeedResult(trials=trials, facts={
            "weighting": self.cfg.weighting, "loss": self.cfg.loss, "schedule": self.cfg.schedule_text(),
            "unet_evals_per_image": evals, "seconds_per_image": seconds / max(1, len(res)),
            "seconds_per_unet_eval": seconds / max(1.0, evals * max(1, len(res)))})


def run_diffusion(task, model: DiffusionModel, model_id: str, cfg: DiffusionConfig, results_dir, *,
                  config_extra: dict | None = None, progress: bool = True) -> pd.DataFrame:
    """Classify ``task``'s evaluation items with ``model`` for each seed and append trial and summary parts to
    ``results_dir`` (through :func:`eval.runner.run_method`; finished seeds are skipped)."""
    from .runner import run_method

    return run_method(DiffusionMethod(task, cfg, model, progress), model_id, results_dir,
                      config_extra=config_extra, progress=progress)

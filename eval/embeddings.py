"""Embeddings: batched, frozen feature extraction, cached on disk and shared by every task and method.

Cache key (sha256 of a canonical JSON): the model's identity (id, weights identity — file hash, pretrained
tag or random seed —, resolved preprocessing and data config, taps, library versions), the stored dtype,
the cache format version, and a digest of the image list *and contents* (relative path + sha256 of the
file bytes, in order). Changing any image, the model, its weights or its preprocessing gives a new key.

Layout: ``<cache>/<model slug>/<key[:24]>/`` holding ``meta.json`` (the key's inputs, item ids, shapes) and
one ``<feature>.npy`` per feature (``pooled`` and each tap; ``.`` in tap names becomes ``-``). A run
writes batches into ``<key>.partial/`` (resumable: finished chunks are kept) and renames the folder into
place when complete, so a reader never sees a half-written entry. A file lock per key makes two processes
asking for the same key compute it once: the second waits and then reads.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from infra.files import cache_dir

CACHE_FORMAT = 1
CHUNK = 512  # images per resumable chunk


class EmbeddingError(RuntimeError):
    pass


@dataclass
class Embeddings:
    item_ids: list[str]
    features: dict[str, np.ndarray]  # name -> [N, D]
    key: str
    from_cache: bool
    path: Path | None = None

    def matrix(self, item_ids, feature: str = "pooled") -> np.ndarray:
        """Rows for ``item_ids`` (in that order) as float32."""
        if feature not in self.features:
            raise EmbeddingError(f"feature {feature!r} not extracted; have {sorted(self.features)}")
        index = {k: i for i, k in enumerate(self.item_ids)}
        try:
            rows = [index[k] for k in item_ids]
        except KeyError as e:
            raise EmbeddingError(f"image {e.args[0]!r} has no embedding") from None
        return np.asarray(self.features[feature][rows], dtype=np.float32)


def default_cache_dir() -> Path:
    return cache_dir("embeddings")


def images_digest(item_ids: list[str], paths: list[str]) -> str:
    h = hashlib.sha256()
    for item, path in zip(item_ids, paths):
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise EmbeddingError(f"cannot read image {path}: {e}") from None
        h.update(item.encode())
        h.update(b"\0")
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def cache_key(identity: dict, digest: str, dtype: str) -> str:
    blob = json.dumps({"format": CACHE_FORMAT, "model": identity, "images": digest, "dtype": dtype},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _fname(feature: str) -> str:
    return feature.replace(".", "-").replace("/", "-") + ".npy"


def load_image(path: str):
    """RGB PIL image through Vantage's one loader (infra.images.read_image: 16/32-bit scaled, not white)."""
    from infra.images import read_image, UnreadableImage

    try:
        return read_image(path, "RGB")
    except UnreadableImage as e:
        raise EmbeddingError(f"cannot decode image {e}") from None


def decode_uint8(path: str):
    """Fast twin of :func:`load_image`: the same RGB PIL image, without the float round trip that
    ``read_image`` makes for 16-/32-bit files. 8-bit RGB, RGBA (alpha dropped) and L (grey copied to three
    channels) PNGs/JPEGs are converted by PIL directly, which gives the same pixels; any other mode or any
    failure goes through :func:`load_image` (and its error messages). Tested equal to it."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            if im.mode in ("RGB", "RGBA", "L"):
                im.load()
                return im.convert("RGB")
    except Exception:  # noqa: BLE001 - a truncated file, a decompression bomb...: the reference decides
        pass
    return load_image(path)


class Uint8Preprocess:
    """Fast twin of a library transform of the form ``[PIL steps (Resize, CenterCrop)] → ToTensor →
    Normalize``: each worker item is the image after the PIL steps as uint8 ``[H, W, 3]`` (a quarter of the
    bytes of a float tensor to pass between processes), and a batch is converted at once as
    ``(u8 / 255 - mean) / std`` in float32 — the same element-wise operations as ``ToTensor`` and
    ``Normalize``, hence the same values bit for bit — directly in channels-last order (the NHWC bytes
    need no transpose). :meth:`from_transform` returns ``None`` for any other transform."""

    def __init__(self, pil_steps: list, mean, std):
        import torch

        self.pil_steps = list(pil_steps)
        self.mean = torch.as_tensor(mean, dtype=torch.float32).reshape(1, -1, 1, 1)
        self.std = torch.as_tensor(std, dtype=torch.float32).reshape(1, -1, 1, 1)

    @classmethod
    def from_transform(cls, transform) -> "Uint8Preprocess | None":
        from torchvision import transforms as T

        steps = getattr(transform, "transforms", None) if isinstance(transform, T.Compose) else None
        if not steps or len(steps) < 2:
            return None
        *pil, to_tensor, norm = steps
        # exact types only: a subclass might do something else (timm's MaybeToTensor is ToTensor for PIL input)
        tensor_step = type(to_tensor) is T.ToTensor or type(to_tensor).__name__ == "MaybeToTensor"
        if not (type(norm) is T.Normalize and tensor_step and all(type(t) in (T.Resize, T.CenterCrop) for t in pil)):
            return None
        return cls(pil, norm.mean, norm.std)

    def __call__(self, path: str) -> np.ndarray:
        im = decode_uint8(path)
        for step in self.pil_steps:
            im = step(im)
        return np.asarray(im)

    def batch(self, arrays: list[np.ndarray]):
        """``[B, 3, H, W]`` float32 (channels-last strides) from uint8 ``[H, W, 3]`` arrays of one shape."""
        import torch

        x = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)
        return x.to(torch.float32).div(255).sub_(self.mean).div_(self.std)


class _Plain:
    """The reference preprocessing of one image: ``transform(load_image(path))``."""

    def __init__(self, transform):
        self.transform = transform

    def __call__(self, path: str):
        return self.transform(load_image(path))

    def batch(self, tensors: list):
        import torch

        return torch.stack(tensors)


def preprocessor(loaded):
    """The per-image step (run in decoding workers) and batch step of ``loaded``'s preprocessing: the fast
    uint8 twin when ``loaded.fast`` is set and its transform has the recognised form, else the plain one."""
    if getattr(loaded, "fast", False):
        fast = Uint8Preprocess.from_transform(loaded.transform)
        if fast is not None:
            return fast
    return _Plain(loaded.transform)


class _Decoded:
    """Images decoded and preprocessed by ``prep`` (a map-style dataset for a DataLoader)."""

    def __init__(self, paths: list[str], prep):
        self.paths, self.prep = paths, prep

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return self.prep(self.paths[i])


def _batches(prep, paths: list[str], batch_size: int, workers: int):
    """Lists of preprocessed images (``prep(path)``), ``batch_size`` at a time, in order. With ``workers``
    > 0, worker processes decode and resize the next batches while the model runs on this one."""
    import multiprocessing

    # inside a launcher's worker process (joblib/loky) a DataLoader cannot start its own workers
    if workers <= 0 or len(paths) <= batch_size or multiprocessing.parent_process() is not None:
        for start in range(0, len(paths), batch_size):
            yield [prep(p) for p in paths[start:start + batch_size]]
        return
    from torch.utils.data import DataLoader

    yield from DataLoader(_Decoded(paths, prep), batch_size=batch_size, shuffle=False,
                          num_workers=workers, collate_fn=list, prefetch_factor=2, persistent_workers=False)


DECODE_WORKERS = 1  # one decoding process overlaps PNG decoding with the model (2 cores here; measured)


def extract(loaded, paths: list[str], batch_size: int = 64, device: str = "cpu", progress: bool = True,
            desc: str = "embeddings", workers: int | None = None) -> dict[str, np.ndarray]:
    """Features for ``paths`` (no cache): dict name -> float32 [N, D]. ``workers`` decoding processes
    (default ``DECODE_WORKERS``; 0 = decode in this process, the reference path) — same values either way.
    Preprocessing follows :func:`preprocessor` (the uint8 twin when ``loaded.fast``; same values)."""
    from tqdm.auto import tqdm

    prep = preprocessor(loaded)
    out: dict[str, list] = {}
    bar = tqdm(total=len(paths), desc=desc, unit="img", disable=not progress, leave=False)
    for items in _batches(prep, paths, batch_size, DECODE_WORKERS if workers is None else workers):
        # images of different shapes (shorter-side resizing of non-square inputs) go in sub-batches
        shapes: dict[tuple, list[int]] = {}
        for i, t in enumerate(items):
            shapes.setdefault(tuple(t.shape), []).append(i)
        parts: dict[str, list] = {}
        order = []
        for idx in shapes.values():
            feats = loaded.features(prep.batch([items[i] for i in idx]).to(device))
            for name, f in feats.items():
                parts.setdefault(name, []).append(f.float().cpu().numpy())
            order.extend(idx)
        inverse = np.argsort(order)
        for name, chunks in parts.items():
            out.setdefault(name, []).append(np.concatenate(chunks)[inverse])
        bar.update(len(items))
    bar.close()
    return {k: np.concatenate(v) for k, v in out.items()}


def get_embeddings(loaded, item_ids: list[str], paths: list[str], cache_dir: str | Path | None = None,
                   batch_size: int = 64, dtype: str = "float32", device: str = "cpu",
                   progress: bool = True, use_cache: bool = True) -> Embeddings:
    """Cached features for the images (``item_ids`` name them; ``paths`` locate them)."""
    from filelock import FileLock

    if dtype not in ("float32", "float16"):
        raise EmbeddingError(f"dtype={dtype!r}: allowed values are float32, float16")
    if len(item_ids) != len(paths) or len(set(item_ids)) != len(item_ids):
        raise EmbeddingError("item_ids must be unique and match paths one to one")
    digest = images_digest(item_ids, paths)
    key = cache_key(loaded.identity(), digest, dtype)
    if not use_cache:
        feats = extract(loaded, paths, batch_size, device, progress)
        return Embeddings(list(item_ids), {k: v.astype(dtype) for k, v in feats.items()}, key, False)
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    folder = root / loaded.model_id.slug
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / key[:24]
    if (final / "meta.json").is_file():
        try:
            return _read(final, key)
        except CacheDamaged as e:  # recomputed below, under the lock
            import logging

            logging.getLogger(__name__).warning("%s; recomputing", e)
    with FileLock(str(folder / f"{key[:24]}.lock")):
        if (final / "meta.json").is_file():  # another process finished it while we waited
            try:
                return _read(final, key)
            except CacheDamaged:
                shutil.rmtree(final)
        partial = folder / f"{key[:24]}.partial"
        partial.mkdir(exist_ok=True)
        chunks = []
        for c, start in enumerate(range(0, len(paths), CHUNK)):
            cfile = partial / f"chunk_{c:06d}.npz"
            if not cfile.is_file():  # resumable: finished chunks survive an interruption
                feats = extract(loaded, paths[start:start + CHUNK], batch_size, device, progress,
                                desc=f"embeddings {loaded.model_id} [{start}/{len(paths)}]")
                tmp = partial / f".chunk_{c:06d}.tmp{os.getpid()}.npz"
                np.savez(tmp, **{k: v.astype(dtype) for k, v in feats.items()})
                os.replace(tmp, cfile)
            chunks.append(cfile)
        merged: dict[str, list] = {}
        for cfile in chunks:
            with np.load(cfile) as z:
                for name in z.files:
                    merged.setdefault(name, []).append(z[name])
        features = {k: np.concatenate(v) for k, v in merged.items()}
        for name, arr in features.items():
            np.save(partial / _fname(name), arr)
        meta = {"key": key, "format": CACHE_FORMAT, "model": loaded.identity(), "images_digest": digest,
                "dtype": dtype, "item_ids": list(item_ids),
                "features": {k: {"file": _fname(k), "shape": list(v.shape),
                                 "sha256": _file_sha256(partial / _fname(k))} for k, v in features.items()}}
        (partial / "meta.json").write_text(json.dumps(meta, indent=1, default=str))
        for cfile in chunks:
            cfile.unlink()
        if final.exists():  # a stale incomplete entry (no meta.json): replace it
            shutil.rmtree(final)
        os.rename(partial, final)
    return Embeddings(list(item_ids), features, key, False, final)


class CacheDamaged(EmbeddingError):
    """A cache entry whose files do not match the checksums recorded when it was written."""


def _file_sha256(path: Path) -> str:
    from infra.files import sha256_file

    return sha256_file(path)


def _read(final: Path, key: str) -> Embeddings:
    """The entry in ``final``, each feature file checked against the sha256 in ``meta.json`` (a permuted,
    zeroed or truncated file raises :class:`CacheDamaged`, and the caller recomputes the entry)."""
    try:
        meta = json.loads((final / "meta.json").read_text())
    except (OSError, ValueError) as e:
        raise CacheDamaged(f"{final}: unreadable meta.json ({e})") from None
    if meta.get("key") != key:
        raise EmbeddingError(f"{final}: cache entry is for key {meta.get('key')}, expected {key}")
    feats = {}
    for name, spec in meta["features"].items():
        path = final / spec["file"]
        if not path.is_file() or ("sha256" in spec and _file_sha256(path) != spec["sha256"]):
            raise CacheDamaged(f"{final}: feature file {spec['file']} is missing or differs from its checksum")
        feats[name] = np.load(path, mmap_mode="r")
        if list(feats[name].shape) != list(spec["shape"]):
            raise CacheDamaged(f"{final}: {spec['file']} has shape {list(feats[name].shape)}, expected {spec['shape']}")
    return Embeddings(list(meta["item_ids"]), feats, key, True, final)

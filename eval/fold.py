"""Inference-only rewrites of a frozen model that keep its features (to float rounding): batch norm folded
into the convolution before it.

In eval mode a ``BatchNorm2d`` is a per-channel affine map ``y = (x - mean) / sqrt(var + eps) * gamma +
beta`` with fixed statistics, so when its only input is a ``Conv2d`` whose output nothing else reads, the
map can be moved into the convolution's weights and bias: ``w' = w * s``, ``b' = (b - mean) * s + beta``
with ``s = gamma / sqrt(var + eps)`` per output channel. The batch norm then becomes the identity (timm's
``BatchNormAct2d`` keeps its activation), which saves one pass over every convolution's output.

Which convolution feeds which batch norm is read from a ``torch.fx`` trace of the model (convolutions and
batch norms kept as leaves); the folding itself edits the original modules in place, so module names (and
``taps``) stay valid. A model that cannot be traced is left unchanged. The plain model (``fast=false`` in
the CLI) is the reference twin; ``tests/test_eval_fastpath.py`` checks the two give the same features.
"""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def _folded_module():
    import torch.nn as nn

    class FoldedBatchNorm(nn.Module):
        """What remains of a batch norm folded into its convolution: the identity, or for timm's
        ``BatchNormAct2d`` its dropout and activation (kept under their names, ``drop`` and ``act``)."""

        def __init__(self, bn):
            super().__init__()
            self.num_features = bn.num_features
            for name in ("drop", "act"):
                if isinstance(getattr(bn, name, None), nn.Module):
                    setattr(self, name, getattr(bn, name))

        def forward(self, x):
            if hasattr(self, "drop"):
                x = self.drop(x)
            if hasattr(self, "act"):
                x = self.act(x)
            return x

    return FoldedBatchNorm


def _foldable_bn(bn) -> bool:
    import torch.nn as nn

    if not isinstance(bn, nn.BatchNorm2d) or bn.training or bn.running_mean is None or bn.running_var is None:
        return False
    # timm's BatchNormAct2d: any extra behaviour beyond (norm, drop, act) would be lost by the rewrite
    extra = {n for n, _ in bn.named_children()} - {"drop", "act"}
    return not extra and type(bn).forward in (nn.BatchNorm2d.forward, _timm_bnact_forward())


def _timm_bnact_forward():
    try:
        from timm.layers import BatchNormAct2d
    except ImportError:  # pragma: no cover - timm is a dependency
        return None
    return BatchNormAct2d.forward


def conv_bn_pairs(root) -> list[tuple[str, str]]:
    """``(conv name, batch norm name)`` for every eval-mode ``BatchNorm2d`` whose only input is a ``Conv2d``
    that feeds nothing else, each module called once, from a ``torch.fx`` trace of ``root``; names as in
    ``root.named_modules()``. Raises whatever the tracer raises for an untraceable model."""
    import torch.fx as fx
    import torch.nn as nn

    class Tracer(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, (nn.Conv2d, nn.BatchNorm2d)) or super().is_leaf_module(m, qualname)

    graph = Tracer().trace(root)
    modules = dict(root.named_modules())
    calls: dict[str, int] = {}
    for node in graph.nodes:
        if node.op == "call_module":
            calls[node.target] = calls.get(node.target, 0) + 1
    pairs = []
    for node in graph.nodes:
        if node.op != "call_module" or not _foldable_bn(modules.get(node.target)) or len(node.args) != 1 or node.kwargs:
            continue
        src = node.args[0]
        if not isinstance(src, fx.Node) or src.op != "call_module" or not isinstance(modules.get(src.target), nn.Conv2d):
            continue
        conv, bn = modules[src.target], modules[node.target]
        if len(src.users) != 1 or calls[src.target] != 1 or calls[node.target] != 1 or conv.out_channels != bn.num_features:
            continue
        pairs.append((src.target, node.target))
    return pairs


def fold_conv_bn(conv, bn) -> None:
    """Fold eval-mode ``bn`` into ``conv`` in place (computed in float64, stored in the conv's dtype)."""
    import torch

    with torch.no_grad():
        w = conv.weight.detach().double()
        mean, var = bn.running_mean.double(), bn.running_var.double()
        gamma = bn.weight.detach().double() if bn.weight is not None else torch.ones_like(mean)
        beta = bn.bias.detach().double() if bn.bias is not None else torch.zeros_like(mean)
        bias = conv.bias.detach().double() if conv.bias is not None else torch.zeros_like(mean)
        scale = gamma / torch.sqrt(var + bn.eps)
        new_w = (w * scale.reshape(-1, *([1] * (w.ndim - 1)))).to(conv.weight.dtype)
        new_b = ((bias - mean) * scale + beta).to(conv.weight.dtype)
        conv.weight = torch.nn.Parameter(new_w, requires_grad=False)
        conv.bias = torch.nn.Parameter(new_b, requires_grad=False)


def fold_batchnorm(root, keep: tuple[str, ...] | list[str] = ()) -> int:
    """Fold every foldable batch norm of ``root`` (eval mode) into its convolution, in place; convolutions
    named in ``keep`` (taps: their own output would change) are left alone. Returns how many were folded
    (0 when the model cannot be traced)."""
    try:
        pairs = conv_bn_pairs(root)
    except Exception as e:  # noqa: BLE001 - any tracing failure means: no rewrite, the plain model runs
        log.info("batch-norm folding skipped: the model cannot be traced (%s: %s)", type(e).__name__,
                 str(e).splitlines()[0][:200] if str(e) else "")
        return 0
    folded_cls = _folded_module()
    modules = dict(root.named_modules())
    n = 0
    for conv_name, bn_name in pairs:
        if conv_name in keep:
            continue
        fold_conv_bn(modules[conv_name], modules[bn_name])
        parent_name, _, attr = bn_name.rpartition(".")
        parent = modules[parent_name] if parent_name else root
        setattr(parent, attr, folded_cls(modules[bn_name]))
        n += 1
    return n

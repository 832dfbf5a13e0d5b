"""Example user models for ``module:`` ids (also used by the tests).

``python -m eval probe model=module:eval.examples:small_cnn pretrained=false ...`` — any importable
module works the same way: a factory returning an ``nn.Module`` that maps normalised images ``[B,3,H,W]``
to features ``[B,D]``, optionally with ``vantage_data_config`` describing its input.
"""
from __future__ import annotations


def small_cnn(width: int = 16, num_features: int = 32, input_size: int = 64):
    """Three conv-BN-ReLU blocks with stride 2, global average pooling and a linear projection."""
    import torch.nn as nn

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            layers, c = [], 3
            for i in range(3):
                layers += [nn.Conv2d(c, width * 2**i, 3, stride=2, padding=1), nn.BatchNorm2d(width * 2**i),
                           nn.ReLU(inplace=True)]
                c = width * 2**i
            self.features = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.proj = nn.Linear(c, num_features)
            self.num_features = num_features
            self.vantage_taps = tuple(f"features.{3 * i + 2}" for i in range(3))  # each block's output (ReLU)
            self.vantage_data_config = {"input_size": (3, input_size, input_size), "mean": (0.5, 0.5, 0.5),
                                        "std": (0.5, 0.5, 0.5), "interpolation": "bilinear", "crop_pct": 1.0}

        def forward(self, x):
            return self.proj(self.pool(self.features(x)).flatten(1))

    return SmallCNN()

"""Stimulus sets and their labels (3D-PC builders, 2D generators)."""

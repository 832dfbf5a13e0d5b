"""Hydra configuration files (YAML only). A package so that ``pkg://configs`` resolves from any install.

The groups ``prop_style``, ``label_rules``, ``audit`` and ``preset/default`` are not here: they are dataclasses
registered as structured configs by the commands that compose them (docs/configuration.md)."""

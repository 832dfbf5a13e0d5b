"""Hydra configuration files (YAML only). A package so that ``pkg://configs`` resolves from any install."""

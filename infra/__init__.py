"""Vantage's bottom layer: files (atomic writes, tables, hashing, caches), images (PNG in and out), output
folders, command-line plumbing (error lines, exit codes, Hydra composition), process pools and safe loading of
tensor files. Every other package builds on it; it imports none of them."""

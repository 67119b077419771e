"""Benchmark datasets: loaders, spec compilation from schemas, and the CLI for slices.

Data files are read from the data directory that `SAGE_TOD_DATA` (or `--data`)
names, never from the package or the checkout; see docs/datasets.md.
"""

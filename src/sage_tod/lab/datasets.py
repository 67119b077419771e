"""Benchmark datasets: loaders, spec compilation from schemas, and the CLI for slices.

Data files are read from the data directory (`SAGE_TOD_DATA`, default
`../shared/data`), never from the package; see docs/datasets.md.
"""

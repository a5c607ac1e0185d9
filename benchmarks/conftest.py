"""Benchmarks: speed claims measured with pytest-benchmark against the naive or peer way, in the
same run.  Run with ``pytest benchmarks/ -p no:xdist``; read the ratios in the table.

The same modules are imported here that tests/conftest.py imports, for the same reason: pytester
runs in-process and numpy cannot be imported twice."""

import numpy  # noqa: F401

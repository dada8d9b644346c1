"""Benchmarks B1-B5 of ``shared/design/benchmarks.md``: ``python -m bench [NAME ...]``.

Benchmarks measure; they never assert on time (tests check behaviour).
"""

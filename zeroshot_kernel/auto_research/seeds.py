"""Seeds derived from named parts, so every random choice is reproducible and independent.

Measurements are paired: every candidate of a study is measured on the same sequence of
experiment seeds (:func:`experiment_seed`), so a candidate and the incumbent share seeds
and the task's seeded noise cancels in their difference.
"""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A 31-bit seed from ``parts`` (stable across processes, unlike ``hash``)."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def study_seed(study: str) -> int:
    """The base seed of a study's measurements (the same for every run of the study)."""
    return derive_seed("study", study)


def experiment_seed(base: int, index: int) -> int:
    """The ``index``-th experiment seed of the sequence every candidate is measured on."""
    return derive_seed(base, "experiment", index)

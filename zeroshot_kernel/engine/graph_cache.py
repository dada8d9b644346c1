"""Values derived from a graph object, kept for as long as that object lives."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityCache(Generic[K, V]):
    """Values computed from an object, keyed by its identity (graph nodes are large:
    hashing one would cost as much as the work saved), dropped when it dies and, past
    ``size`` entries, oldest put first.

    Reads take no lock and a dying object's entry is dropped without one: a weakref
    callback can run inside any allocation, even while this thread holds a lock.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: dict[int, tuple[weakref.ref[Any], V]] = {}
        self._lock = threading.Lock()

    def get(self, owner: K) -> V | None:
        found = self._values.get(id(owner))
        if found is None or found[0]() is not owner:
            return None
        return found[1]

    def put(self, owner: K, value: V) -> None:
        key = id(owner)
        entry = (weakref.ref(owner, self._forget(key)), value)
        with self._lock:
            self._values.pop(key, None)  # re-inserted last: the newest
            self._values[key] = entry
            while len(self._values) > self._size:
                self._values.pop(next(iter(self._values)), None)

    def get_or_make(self, owner: K, make: Callable[[K], V]) -> V:
        value = self.get(owner)
        if value is None:
            value = make(owner)
            self.put(owner, value)
        return value

    def _forget(self, key: int) -> Callable[[weakref.ref[Any]], None]:
        def forget(ref: weakref.ref[Any]) -> None:
            found = self._values.get(key)
            if found is not None and found[0] is ref:
                self._values.pop(key, None)

        return forget

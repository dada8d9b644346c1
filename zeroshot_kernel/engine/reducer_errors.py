"""Why a reduction can fail. Each is a bug or a corrupt input, never a run outcome: outcomes
of a well-formed run are terminals, errors inside the graph are routed by its guards."""

from __future__ import annotations

from zeroshot_kernel.exceptions import InvalidInput


class ReducerError(InvalidInput):
    """The graph, its input or its history cannot be reduced."""


class HistoryMismatch(ReducerError):
    """The recorded history is not one this reducer could have produced for this graph and
    input: an unknown or unconsumed execution, a different input, an unowned void."""


class PayloadTypeError(ReducerError):
    """A value built from bindings does not fit its declared type; admission should have
    proven this impossible, so the graph or the initial input was not admitted as declared."""


class NoChoiceRoute(ReducerError):
    """No branch guard held and the choice has no ``otherwise``; admission proves choices
    exhaustive, so this means the graph was not verified."""

"""Rules for the bundled ``quadrature`` code task, as an agent would write them into
``quadrature.py`` (``rule(budget)`` returns nodes in [0, 1] and their weights)."""

SIMPSON = '''"""Composite Simpson's rule: the most (even) intervals the budget allows."""


def rule(budget):
    n = budget - 1 if (budget - 1) % 2 == 0 else budget - 2
    h = 1.0 / n
    weights = [(1 if i in (0, n) else 4 if i % 2 else 2) * h / 3 for i in range(n + 1)]
    return [i * h for i in range(n + 1)], weights
'''
SIMPSON_LINE = "weights = [(1 if i in (0, n) else 4 if i % 2 else 2) * h / 3 for i in range(n + 1)]"

GAUSS = '''"""Composite 4-point Gauss-Legendre on 16 panels: exactly 64 nodes."""
import math

_T = math.sqrt(3 / 7 + 2 / 7 * math.sqrt(6 / 5))
_S = math.sqrt(3 / 7 - 2 / 7 * math.sqrt(6 / 5))
_W_S = (18 + math.sqrt(30)) / 36
_W_T = (18 - math.sqrt(30)) / 36
_POINTS = ((-_T, _W_T), (-_S, _W_S), (_S, _W_S), (_T, _W_T))


def rule(budget):
    panels = budget // 4
    h = 1.0 / panels
    nodes, weights = [], []
    for i in range(panels):
        mid = (i + 0.5) * h
        for x, w in _POINTS:
            nodes.append(mid + x * h / 2)
            weights.append(w * h / 2)
    return nodes, weights
'''

OVER_BUDGET = "def rule(budget):\n    n = budget + 1\n    return [0.5] * n, [1.0 / n] * n\n"
"""One node more than the budget: the run fails, with no metric."""

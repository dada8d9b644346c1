"""Run ``quadrature.integrate`` on a seeded family of smooth integrands (not editable).

ZEROSHOT_SEED draws INTEGRANDS integrands f(x) = p(x) exp(k x) + q(x) sin(w x + phi) on
random intervals [a, b] (p, q cubic with random coefficients). Each is integrated with at
most BUDGET evaluations of f, counted by a wrapper: one more evaluation, a non-float
argument or a non-finite answer ends the run with an error. The estimates and the calls
each took are written to $ZEROSHOT_OUTPUT_DIR/estimates.json; the scorer, which this
folder never sees, knows the exact integrals and prints the metric.
"""

import json
import math
import os
import random
import sys

from quadrature import integrate

BUDGET = 64
INTEGRANDS = 12
DEGREE = 3


class BudgetExceeded(RuntimeError):
    pass


class Counted:
    """The integrand as integrate sees it: one float in, one float out, BUDGET calls."""

    __slots__ = ("_f", "calls")

    def __init__(self, f):
        self._f = f
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        if self.calls > BUDGET:
            raise BudgetExceeded(f"more than {BUDGET} evaluations of f")
        return self._f(float(x))


def draw(rng):
    """One integrand's description: interval, polynomials and rates."""
    a = rng.uniform(-1.0, 0.5)
    b = a + rng.uniform(1.0, 3.0)
    p = [rng.uniform(-1.0, 1.0) for _ in range(DEGREE + 1)]
    q = [rng.uniform(-1.0, 1.0) for _ in range(DEGREE + 1)]
    k = rng.choice((-1.0, 1.0)) * rng.uniform(0.5, 1.5)
    w = rng.uniform(1.0, 8.0)
    phi = rng.uniform(0.0, 2.0 * math.pi)
    return a, b, p, q, k, w, phi


def poly(c, x):
    return sum(ci * x**i for i, ci in enumerate(c))


def main():
    rng = random.Random(int(os.environ.get("ZEROSHOT_SEED", "0")))
    drawn = [draw(rng) for _ in range(INTEGRANDS)]
    estimates, calls = [], []
    for a, b, p, q, k, w, phi in drawn:
        f = Counted(lambda x, p=p, q=q, k=k, w=w, phi=phi:
                    poly(p, x) * math.exp(k * x) + poly(q, x) * math.sin(w * x + phi))
        estimate = integrate(f, a, b, BUDGET)
        if isinstance(estimate, bool) or not isinstance(estimate, int | float) \
                or not math.isfinite(estimate):
            sys.exit(f"integrate returned {estimate!r}, not a finite float")
        estimates.append(float(estimate))
        calls.append(f.calls)
    path = os.path.join(os.environ["ZEROSHOT_OUTPUT_DIR"], "estimates.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"estimates": estimates, "calls": calls}, handle)
    print(f"{len(estimates)} integrands, at most {max(calls)} of {BUDGET} evaluations each")


if __name__ == "__main__":
    main()

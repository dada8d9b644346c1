"""Score ``quadrature.integrate`` on a seeded family of smooth integrands (not editable).

ZEROSHOT_SEED draws INTEGRANDS integrands f(x) = p(x) exp(k x) + q(x) sin(w x + phi) on
random intervals [a, b] (p, q cubic with random coefficients), whose exact integrals are
known in closed form. Each is integrated with at most BUDGET evaluations of f, counted by
a wrapper: one more evaluation, a non-float argument or a non-finite answer ends the run
with an error and no metric. The metric is the mean over the integrands of
log10(max(|estimate - exact| / (1 + |exact|), FLOOR)): lower is better, FLOOR is exact.
"""

import cmath
import json
import math
import os
import random
import sys

from quadrature import integrate

BUDGET = 64
INTEGRANDS = 12
FLOOR = 1e-15
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


def derivative(c):
    return [i * ci for i, ci in enumerate(c)][1:]


def antiderivative(c, rate, x):
    """A primitive of poly(c, x) * exp(rate * x) at x, for a (complex) rate != 0:
    exp(rate x) * sum_j (-1)^j c^(j)(x) / rate^(j+1), by parts."""
    total, sign, d = 0j, 1.0, list(c)
    for j in range(len(c)):
        total += sign * poly(d, x) / rate ** (j + 1)
        sign, d = -sign, derivative(d)
    return cmath.exp(rate * x) * total


def exact(a, b, p, q, k, w, phi):
    smooth = antiderivative(p, k, b) - antiderivative(p, k, a)
    wave = cmath.exp(1j * phi) * (antiderivative(q, 1j * w, b) - antiderivative(q, 1j * w, a))
    return smooth.real + wave.imag


def main():
    rng = random.Random(int(os.environ.get("ZEROSHOT_SEED", "0")))
    drawn = [draw(rng) for _ in range(INTEGRANDS)]
    logs = []
    for a, b, p, q, k, w, phi in drawn:
        f = Counted(lambda x, p=p, q=q, k=k, w=w, phi=phi:
                    poly(p, x) * math.exp(k * x) + poly(q, x) * math.sin(w * x + phi))
        estimate = integrate(f, a, b, BUDGET)
        if isinstance(estimate, bool) or not isinstance(estimate, int | float) \
                or not math.isfinite(estimate):
            sys.exit(f"integrate returned {estimate!r}, not a finite float")
        truth = exact(a, b, p, q, k, w, phi)  # computed only after integrate has answered
        error = abs(float(estimate) - truth) / (1.0 + abs(truth))
        logs.append(math.log10(max(error, FLOOR)))
    value = sum(logs) / len(logs)
    print(f"{len(logs)} integrands, {BUDGET} evaluations each: worst {max(logs):.2f}, "
          f"best {min(logs):.2f}")
    print("ZEROSHOT_METRIC " + json.dumps({"name": "log10_error", "value": value}))


if __name__ == "__main__":
    main()

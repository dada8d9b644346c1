"""Score the rule the candidate's run left (the scorer: the candidate never sees it).

Reads $ZEROSHOT_OUTPUT_DIR/rule.json, a regular file of at most MAX_BYTES (never through
a link): 1 to BUDGET nodes in [0, 1] and as many weights, all finite. It draws INTEGRANDS
integrands f(x) = p(x) exp(k x) + q(x) sin(w x + phi) on intervals [a, b] (p, q cubic)
from ZEROSHOT_SEED and KEY, maps the rule onto each interval, and prints the metric: the
mean over the integrands of log10(max(|estimate - exact| / (1 + |exact|), FLOOR)), lower
is better, with the exact integrals in closed form. Anything else (a missing, oversized
or truncated file, not JSON, NaN, too many nodes, a node outside [0, 1]) is said on
stderr, with no metric and exit 1.

KEY is why a rule cannot be fitted to the integrands it is judged on: the candidate knows
ZEROSHOT_SEED, not KEY, which lives in this folder only (no box the candidate's code runs
in shows it). A task of your own keeps its key, like held-out labels, out of the
candidate's folder and out of anything its agents can read.
"""

import cmath
import json
import math
import os
import random
import stat
import sys

KEY = "quadrature-integrands-1f6c0e2a"
BUDGET = 64
INTEGRANDS = 12
FLOOR = 1e-15
DEGREE = 3
MAX_BYTES = 64 * 1024
OUTPUT = "rule.json"


class Invalid(ValueError):
    """The outputs cannot be scored."""


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


def estimate(nodes, weights, a, b, p, q, k, w, phi):
    """The rule on [0, 1] mapped onto [a, b], applied to the integrand."""
    span = b - a
    values = []
    for x, weight in zip(nodes, weights):
        t = a + span * x
        values.append(weight * (poly(p, t) * math.exp(k * t) + poly(q, t) * math.sin(w * t + phi)))
    return span * math.fsum(values)


def read_bounded(folder):
    """The output file's bytes: a regular file opened without following a link (a link
    could point the scorer at anything it can read), at most MAX_BYTES."""
    try:
        handle = os.open(os.path.join(folder, OUTPUT), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as failed:
        raise Invalid(f"cannot open {OUTPUT}: {failed.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise Invalid(f"{OUTPUT} is not a regular file")
        data = b""
        while len(data) <= MAX_BYTES:
            chunk = os.read(handle, MAX_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(handle)
    if len(data) > MAX_BYTES:
        raise Invalid(f"{OUTPUT} is larger than {MAX_BYTES} bytes")
    return data


def _refuse_constant(name):
    raise Invalid(f"{OUTPUT} holds {name}, not a finite number")


def numbers(document, name):
    values = document.get(name)
    if not isinstance(values, list):
        raise Invalid(f"{OUTPUT} needs a list of {name}")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value):
            raise Invalid(f"a {name[:-1]} is not a finite number")
    return [float(v) for v in values]


def read_rule(folder):
    """The nodes and weights, checked (see the module doc)."""
    data = read_bounded(folder)
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as failed:
        if isinstance(failed, Invalid):
            raise
        raise Invalid(f"{OUTPUT} is not JSON ({type(failed).__name__})") from None
    if not isinstance(document, dict):
        raise Invalid(f"{OUTPUT} is not an object")
    nodes, weights = numbers(document, "nodes"), numbers(document, "weights")
    if not 1 <= len(nodes) <= BUDGET:
        raise Invalid(f"{OUTPUT} needs 1 to {BUDGET} nodes, not {len(nodes)}")
    if len(weights) != len(nodes):
        raise Invalid(f"{OUTPUT} needs as many weights as nodes")
    if not all(0.0 <= x <= 1.0 for x in nodes):
        raise Invalid("a node is outside [0, 1]")
    return nodes, weights


def main():
    try:
        nodes, weights = read_rule(os.environ["ZEROSHOT_OUTPUT_DIR"])
    except Invalid as invalid:
        sys.exit(f"no metric: {invalid}")
    rng = random.Random(f"{KEY}:{int(os.environ.get('ZEROSHOT_SEED', '0'))}")
    logs = []
    for _ in range(INTEGRANDS):
        integrand = draw(rng)
        truth = exact(*integrand)
        error = abs(estimate(nodes, weights, *integrand) - truth) / (1.0 + abs(truth))
        logs.append(math.log10(max(error, FLOOR)))
    value = sum(logs) / len(logs)
    print(f"{len(nodes)} nodes on {len(logs)} integrands: worst {max(logs):.2f}, "
          f"best {min(logs):.2f}")
    print("ZEROSHOT_METRIC " + json.dumps({"name": "log10_error", "value": value}))


if __name__ == "__main__":
    main()

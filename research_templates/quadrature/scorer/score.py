"""Score the estimates the candidate's run left (the scorer: the candidate never sees it).

Reads $ZEROSHOT_OUTPUT_DIR/estimates.json, a regular file of at most MAX_BYTES (never
through a link): INTEGRANDS finite estimates and as many call counts, each at most BUDGET.
It draws the same integrands from ZEROSHOT_SEED, computes their exact integrals in closed
form and prints the metric: the mean over the integrands of
log10(max(|estimate - exact| / (1 + |exact|), FLOOR)), lower is better. Anything else (a
missing, oversized or truncated file, not JSON, NaN, the wrong count, a call count over
the budget) is said on stderr, with no metric and exit 1.

``draw`` repeats the one in the candidate's run.py on purpose: the scorer never imports a
file of the candidate's folder, whose copy the candidate's own process could rewrite.
"""

import cmath
import json
import math
import os
import random
import stat
import sys

BUDGET = 64
INTEGRANDS = 12
FLOOR = 1e-15
DEGREE = 3
MAX_BYTES = 64 * 1024
OUTPUT = "estimates.json"


class Invalid(ValueError):
    """The outputs cannot be scored."""


def draw(rng):
    """One integrand's description: interval, polynomials and rates (as run.py draws it)."""
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


def read_estimates(folder):
    """The estimates and call counts, checked (see the module doc)."""
    data = read_bounded(folder)
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as failed:
        if isinstance(failed, Invalid):
            raise
        raise Invalid(f"{OUTPUT} is not JSON ({type(failed).__name__})") from None
    if not isinstance(document, dict):
        raise Invalid(f"{OUTPUT} is not an object")
    estimates, calls = document.get("estimates"), document.get("calls")
    if not isinstance(estimates, list) or len(estimates) != INTEGRANDS:
        raise Invalid(f"{OUTPUT} needs {INTEGRANDS} estimates")
    if not isinstance(calls, list) or len(calls) != INTEGRANDS:
        raise Invalid(f"{OUTPUT} needs {INTEGRANDS} call counts")
    for value in estimates:
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value):
            raise Invalid("an estimate is not a finite number")
    for count in calls:
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= BUDGET:
            raise Invalid(f"a call count is not a whole number from 0 to {BUDGET}")
    return [float(v) for v in estimates]


def main():
    try:
        estimates = read_estimates(os.environ["ZEROSHOT_OUTPUT_DIR"])
    except Invalid as invalid:
        sys.exit(f"no metric: {invalid}")
    rng = random.Random(int(os.environ.get("ZEROSHOT_SEED", "0")))
    logs = []
    for estimate in estimates:
        truth = exact(*draw(rng))
        error = abs(estimate - truth) / (1.0 + abs(truth))
        logs.append(math.log10(max(error, FLOOR)))
    value = sum(logs) / len(logs)
    print(f"{len(logs)} integrands: worst {max(logs):.2f}, best {min(logs):.2f}")
    print("ZEROSHOT_METRIC " + json.dumps({"name": "log10_error", "value": value}))


if __name__ == "__main__":
    main()

"""The quadrature rule under research (the editable file).

integrate(f, a, b, budget) returns an estimate of the integral of f over [a, b] using at
most ``budget`` calls of f (each with one float). This starting version is a left Riemann
sum: simple, and first-order accurate.
"""


def integrate(f, a, b, budget):
    h = (b - a) / budget
    return h * sum(f(a + i * h) for i in range(budget))

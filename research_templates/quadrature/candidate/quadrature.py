"""The quadrature rule under research (the editable file).

rule(budget) returns the nodes and weights of a rule for integrals over [0, 1]: the
integral of g is estimated as sum(w * g(x) for x, w in zip(nodes, weights)). At most
``budget`` nodes, each in [0, 1]. The experiment maps the rule onto each integrand's
interval. This starting version is a left Riemann sum: simple, and first-order accurate.
"""


def rule(budget):
    h = 1.0 / budget
    return [i * h for i in range(budget)], [h] * budget

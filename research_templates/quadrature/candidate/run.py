"""Ask ``quadrature.rule`` for its rule and leave it for the scorer (not editable).

The rule is data: BUDGET nodes at most, in [0, 1], with as many weights, all finite. It
is written to $ZEROSHOT_OUTPUT_DIR/rule.json. The integrands it is judged on are drawn
by the scorer from a key this folder never sees, so no rule can be fitted to them.
"""

import json
import math
import os
import sys

from quadrature import rule

BUDGET = 64


def finite(values, name):
    values = list(values)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            sys.exit(f"rule() returned a {name} that is not a finite number: {value!r}")
    return [float(v) for v in values]


def main():
    nodes, weights = rule(BUDGET)
    nodes, weights = finite(nodes, "node"), finite(weights, "weight")
    if not 1 <= len(nodes) <= BUDGET or len(weights) != len(nodes):
        sys.exit(f"rule() needs 1 to {BUDGET} nodes and as many weights, "
                 f"got {len(nodes)} and {len(weights)}")
    if not all(0.0 <= x <= 1.0 for x in nodes):
        sys.exit("rule() returned a node outside [0, 1]")
    path = os.path.join(os.environ["ZEROSHOT_OUTPUT_DIR"], "rule.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"nodes": nodes, "weights": weights}, handle)
    print(f"a rule of {len(nodes)} nodes, weights summing to {math.fsum(weights):.6g}")


if __name__ == "__main__":
    main()

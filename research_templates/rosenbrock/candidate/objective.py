"""The Rosenbrock function at the point in params.json, plus seeded measurement noise.

Two kinds of noise, as in a real experiment: a part every candidate shares on the same
seed (seeded by ZEROSHOT_SEED alone; paired seeds cancel it), and a part of this
candidate's own (seeded by the seed and the point), proportional to the value: 10 % of
it, like a training loss whose run-to-run spread shrinks as the loss does.
"""

import json
import os
import random

SHARED_SIGMA = 0.05
RELATIVE_SIGMA = 0.1

with open("params.json", encoding="utf-8") as handle:
    params = json.load(handle)
x, y = params["x"], params["y"]
value = (1.0 - x) ** 2 + 100.0 * (y - x * x) ** 2
seed = os.environ.get("ZEROSHOT_SEED", "0")
shared = random.Random(int(seed)).gauss(0.0, SHARED_SIGMA)
own = random.Random(f"{seed}:{x!r}:{y!r}").gauss(0.0, RELATIVE_SIGMA)
print("ZEROSHOT_METRIC " + json.dumps({"name": "rosenbrock", "value": value * (1 + own) + shared}))

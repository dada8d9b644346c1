"""The Branin-Hoo function at the point in params.json, plus seeded measurement noise.

Two kinds of noise, as in a real experiment: a part every candidate shares on the same
seed (seeded by ZEROSHOT_SEED alone; paired seeds cancel it), and a part of this
candidate's own (seeded by the seed and the point), which they do not.
"""

import json
import math
import os
import random

SHARED_SIGMA = 0.05
OWN_SIGMA = 0.05
A, B, C = 1.0, 5.1 / (4.0 * math.pi**2), 5.0 / math.pi
R, S, T = 6.0, 10.0, 1.0 / (8.0 * math.pi)

with open("params.json", encoding="utf-8") as handle:
    params = json.load(handle)
x1, x2 = params["x1"], params["x2"]
value = A * (x2 - B * x1**2 + C * x1 - R) ** 2 + S * (1.0 - T) * math.cos(x1) + S
seed = os.environ.get("ZEROSHOT_SEED", "0")
shared = random.Random(int(seed)).gauss(0.0, SHARED_SIGMA)
own = random.Random(f"{seed}:{x1!r}:{x2!r}").gauss(0.0, OWN_SIGMA)
print("ZEROSHOT_METRIC " + json.dumps({"name": "branin", "value": value + shared + own}))

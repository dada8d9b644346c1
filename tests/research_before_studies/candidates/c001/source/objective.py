"""The Branin-Hoo function at the point in params.json, plus seeded measurement noise."""

import json
import math
import os
import random

NOISE_SIGMA = 0.05
A, B, C = 1.0, 5.1 / (4.0 * math.pi**2), 5.0 / math.pi
R, S, T = 6.0, 10.0, 1.0 / (8.0 * math.pi)

with open("params.json", encoding="utf-8") as handle:
    params = json.load(handle)
x1, x2 = params["x1"], params["x2"]
value = A * (x2 - B * x1**2 + C * x1 - R) ** 2 + S * (1.0 - T) * math.cos(x1) + S
noise = random.Random(int(os.environ.get("ZEROSHOT_SEED", "0"))).gauss(0.0, NOISE_SIGMA)
print("ZEROSHOT_METRIC " + json.dumps({"name": "branin", "value": value + noise}))

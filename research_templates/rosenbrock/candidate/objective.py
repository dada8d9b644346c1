"""The Rosenbrock function at the point in params.json, plus seeded measurement noise."""

import json
import os
import random

NOISE_SIGMA = 0.05

with open("params.json", encoding="utf-8") as handle:
    params = json.load(handle)
x, y = params["x"], params["y"]
value = (1.0 - x) ** 2 + 100.0 * (y - x * x) ** 2
noise = random.Random(int(os.environ.get("ZEROSHOT_SEED", "0"))).gauss(0.0, NOISE_SIGMA)
print("ZEROSHOT_METRIC " + json.dumps({"name": "rosenbrock", "value": value + noise}))

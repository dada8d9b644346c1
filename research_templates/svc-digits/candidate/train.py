"""Validation error of an SVC on scikit-learn's digits for the parameters in params.json.

ZEROSHOT_SEED picks the stratified validation split; the model itself is deterministic.
"""

import json
import os

from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

with open("params.json", encoding="utf-8") as handle:
    params = json.load(handle)
seed = int(os.environ.get("ZEROSHOT_SEED", "0"))

features, labels = load_digits(return_X_y=True)
x_train, x_val, y_train, y_val = train_test_split(
    features, labels, test_size=params["validation_fraction"], stratify=labels,
    random_state=seed,
)
steps = [StandardScaler()] if params["scaler"] == "standard" else []
model = make_pipeline(*steps, SVC(C=params["C"], gamma=params["gamma"]))
model.fit(x_train, y_train)
error = 1.0 - model.score(x_val, y_val)
print("ZEROSHOT_METRIC " + json.dumps({"name": "val_error", "value": error}))

"""Train a small MLP with AdamW on a synthetic regression problem; report the validation
loss after every epoch (an intermediate value, for the pruner) and at the end.

The data, the initial weights and the batch order come from numpy generators seeded by
ZEROSHOT_SEED (the teacher that defines the target is fixed), so every backend trains the
same model from the same start on the same batches:

- ``torch`` on CUDA when torch is installed and a GPU is visible, on the CPU otherwise;
- ``numpy``: the same network, loss and AdamW written out, where torch is not installed.

``backend`` in params.json picks one (``auto``, ``torch`` or ``numpy``). A loss that is no
longer finite ends the run as a crash (the learning rate was too high).
"""

import json
import math
import os
import sys

import numpy as np

TEACHER_SEED = 20_240_601
INPUTS = 16
NOISE = 0.1
BETAS = (0.9, 0.999)
EPSILON = 1e-8


def report(value, step=None):
    line = {"name": "val_loss", "value": value}
    if step is not None:
        line["step"] = step
    print("ZEROSHOT_METRIC " + json.dumps(line), flush=True)


def make_data(seed, train_size, val_size):
    """Inputs in [-2, 2]^16; target: a fixed random tanh teacher, a sine term, noise."""
    teacher = np.random.default_rng(TEACHER_SEED)
    w1 = teacher.normal(size=(INPUTS, 32)) / math.sqrt(INPUTS)
    b1 = teacher.normal(size=32) * 0.5
    w2 = teacher.normal(size=(32, 1)) / math.sqrt(32)
    rng = np.random.default_rng([seed, 1])
    x = rng.uniform(-2.0, 2.0, size=(train_size + val_size, INPUTS))
    y = np.tanh(x @ w1 + b1) @ w2 + 0.5 * np.sin(2.0 * x[:, :1])
    y = y + rng.normal(scale=NOISE, size=y.shape)
    x, y = x.astype(np.float32), y.astype(np.float32)
    return (x[:train_size], y[:train_size]), (x[train_size:], y[train_size:])


def initial_weights(seed, width, depth):
    """Uniform(+-1/sqrt(fan_in)) weights and biases, as torch.nn.Linear starts."""
    rng = np.random.default_rng([seed, 2])
    sizes = [INPUTS] + [width] * depth + [1]
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        weight = rng.uniform(-bound, bound, size=(fan_in, fan_out)).astype(np.float32)
        bias = rng.uniform(-bound, bound, size=fan_out).astype(np.float32)
        layers.append((weight, bias))
    return layers


def batches(seed, train_size, batch_size, epochs):
    """Each epoch's shuffled batches of row indices."""
    rng = np.random.default_rng([seed, 3])
    for _ in range(epochs):
        order = rng.permutation(train_size)
        yield [order[i : i + batch_size] for i in range(0, train_size, batch_size)]


def train_numpy(params, data, layers, schedule):
    (x, y), (x_val, y_val) = data
    tanh = params["activation"] == "tanh"
    weights = [array.copy() for layer in layers for array in layer]
    moments = [np.zeros_like(w) for w in weights]
    squares = [np.zeros_like(w) for w in weights]
    lr, decay = params["lr"], params["weight_decay"]
    steps = 0

    def forward(inputs):
        hidden = [inputs]
        for i in range(0, len(weights) - 2, 2):
            z = hidden[-1] @ weights[i] + weights[i + 1]
            hidden.append(np.tanh(z) if tanh else np.maximum(z, 0.0))
        return hidden, hidden[-1] @ weights[-2] + weights[-1]

    for epoch, epoch_batches in enumerate(schedule, start=1):
        for rows in epoch_batches:
            hidden, prediction = forward(x[rows])
            grad = 2.0 * (prediction - y[rows]) / prediction.size
            grads = [None] * len(weights)
            for i in range(len(weights) - 2, -1, -2):
                grads[i] = hidden[i // 2].T @ grad
                grads[i + 1] = grad.sum(axis=0)
                if i:
                    back = grad @ weights[i].T
                    out = hidden[i // 2]
                    grad = back * (1.0 - out * out) if tanh else back * (out > 0.0)
            steps += 1
            fix1, fix2 = 1.0 - BETAS[0] ** steps, 1.0 - BETAS[1] ** steps
            for w, g, m, v in zip(weights, grads, moments, squares):
                w *= 1.0 - lr * decay
                m *= BETAS[0]
                m += (1.0 - BETAS[0]) * g
                v *= BETAS[1]
                v += (1.0 - BETAS[1]) * g * g
                w -= lr * (m / fix1) / (np.sqrt(v / fix2) + EPSILON)
        loss = float(np.mean((forward(x_val)[1] - y_val) ** 2))
        yield epoch, loss


def train_torch(params, data, layers, schedule, torch):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"backend: torch {torch.__version__} on {name}", flush=True)
    (x, y), (x_val, y_val) = (
        tuple(torch.from_numpy(a).to(device) for a in pair) for pair in data
    )
    modules = []
    for weight, bias in layers:
        linear = torch.nn.Linear(*weight.shape)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(weight.T.copy()))
            linear.bias.copy_(torch.from_numpy(bias))
        modules += [linear, torch.nn.Tanh() if params["activation"] == "tanh" else torch.nn.ReLU()]
    model = torch.nn.Sequential(*modules[:-1]).to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=params["lr"],
        betas=BETAS,
        eps=EPSILON,
        weight_decay=params["weight_decay"],
    )
    for epoch, epoch_batches in enumerate(schedule, start=1):
        model.train()
        for rows in epoch_batches:
            index = torch.from_numpy(rows).to(device)
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(model(x[index]), y[index])
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            yield epoch, float(torch.nn.functional.mse_loss(model(x_val), y_val))


def torch_module(backend):
    if backend == "numpy":
        return None
    try:
        import torch
    except ImportError:
        if backend == "torch":
            raise
        return None
    return torch


def main():
    with open("params.json", encoding="utf-8") as handle:
        params = json.load(handle)
    seed = int(os.environ.get("ZEROSHOT_SEED", "0"))
    data = make_data(seed, params["train_size"], params["val_size"])
    layers = initial_weights(seed, params["width"], params["depth"])
    schedule = batches(seed, params["train_size"], params["batch_size"], params["epochs"])
    backend = params.get("backend", "auto")
    torch = torch_module(backend)
    if torch is None:
        why = "chosen in params.json" if backend == "numpy" else "torch is not installed"
        print(f"backend: numpy {np.__version__} ({why})", flush=True)
        curve = train_numpy(params, data, layers, schedule)
    else:
        curve = train_torch(params, data, layers, schedule, torch)
    loss = math.inf
    for epoch, loss in curve:
        if not math.isfinite(loss):
            sys.exit(f"the loss diverged at epoch {epoch} (lr {params['lr']:g})")
        report(loss, step=epoch)
    report(loss)


if __name__ == "__main__":
    main()

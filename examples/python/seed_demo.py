"""The seed demo in Python: a model that is one matmul + softmax layer,
trained with an MSE loss against one-hot targets over an oar.io.DataLoader,
on one device (the default, or --device cpu|mock).

Data: three Gaussian blobs in 4-D (numpy, fixed seed). Prints the loss per
epoch and the final accuracy; exits 0 when the accuracy is at least 0.9.
"""
import argparse
import sys

import numpy as np

import oar
import oar.nn as nn
import oar.nn.functional as F


class SoftmaxRegression(nn.Layer):
    """probs = softmax(x @ W + b)."""

    def __init__(self, in_features, classes):
        super().__init__()
        self.weight = self.create_parameter([in_features, classes])
        self.bias = self.create_parameter([classes], is_bias=True)

    def forward(self, x):
        return F.softmax(oar.matmul(x, self.weight) + self.bias, axis=-1)


def blobs(n_per_class=200, classes=3, dim=4, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0.0, 3.0, (classes, dim))
    x = np.concatenate([c + rng.normal(0.0, 1.0, (n_per_class, dim)) for c in centers]).astype(np.float32)
    y = np.repeat(np.arange(classes), n_per_class)
    return x, np.eye(classes, dtype=np.float32)[y], y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    if args.device:
        oar.set_device(args.device)
    oar.seed(7)
    x, onehot, labels = blobs()
    loader = oar.io.DataLoader(oar.io.TensorDataset([x, onehot]), batch_size=32, shuffle=True)
    model = SoftmaxRegression(4, 3)
    opt = oar.optimizer.SGD(learning_rate=0.5, parameters=model.parameters())
    mse = nn.MSELoss()
    print(f"seed demo on {oar.get_device()}: softmax(x @ W + b), MSE loss, {len(loader)} batches of 32")
    for epoch in range(args.epochs):
        total = 0.0
        for xb, yb in loader:
            loss = mse(model(xb), yb)
            loss.backward()
            opt.step()
            opt.clear_grad()
            total += float(loss)
        print(f"  epoch {epoch + 1:2d}  mean loss {total / len(loader):.5f}")
    with oar.no_grad():
        accuracy = float((model(oar.to_tensor(x)).argmax(-1).numpy() == labels).mean())
    print(f"accuracy: {accuracy:.4f}")
    return 0 if accuracy >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())

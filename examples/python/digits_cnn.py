"""The Python main job: a small CNN on the 8x8 handwritten digits that ship
inside scikit-learn (sklearn.datasets.load_digits: 1797 images, no
download), trained with oar.Model.fit (progress bar with loss and accuracy),
evaluated on a held-out test set, saved with oar.save and reloaded into a
fresh network that must predict exactly the same, then exported as a static
program (oar.jit.save: DIR/digits_cnn_program.json + .safetensors, which
oar-run runs from C++) and run again through oar.jit.load.

Exits 0 when the test accuracy is at least 0.95, the reloaded model agrees
and the exported program's logits match eager mode. Usage: python digits_cnn.py [--epochs N] [--device cpu|mock] [--out DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import oar
import oar.nn as nn


def load_digits():
    """(images [N, 1, 8, 8] float32 in [0, 1], labels [N] int64); installs
    scikit-learn into this interpreter's environment when it is missing."""
    try:
        from sklearn.datasets import load_digits as sk_load
    except ImportError:
        print("digits_cnn: scikit-learn is missing; pip installing it", flush=True)
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "scikit-learn"])
        from sklearn.datasets import load_digits as sk_load
    digits = sk_load()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    return images, digits.target.astype(np.int64)


def split(images, labels, test_fraction=0.2, seed=0):
    """A fixed permutation (numpy seed), so train/test are the same every run."""
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(round(len(labels) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return (images[train], labels[train]), (images[test], labels[test])


class DigitsCNN(nn.Layer):
    """[N, 1, 8, 8] -> conv 3x3 (16) -> ReLU -> max pool 2 -> conv 3x3 (32)
    -> BatchNorm -> ReLU -> max pool 2 -> flatten [N, 128] -> Linear -> 10 logits."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2D(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2),
            nn.Conv2D(16, 32, 3, padding=1), nn.BatchNorm2D(32), nn.ReLU(), nn.MaxPool2D(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(32 * 2 * 2, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default=None)
    parser.add_argument("--out", default=None, help="directory for the saved model (default: a temporary one)")
    args = parser.parse_args()
    if args.device:
        oar.set_device(args.device)
    oar.seed(2026)

    images, labels = load_digits()
    (x_train, y_train), (x_test, y_test) = split(images, labels)
    print(f"digits: {len(y_train)} train / {len(y_test)} test images of 8x8 on {oar.get_device()}")
    train_set = oar.io.TensorDataset([x_train, y_train])
    test_set = oar.io.TensorDataset([x_test, y_test])

    net = DigitsCNN()
    epochs, steps_per_epoch = args.epochs, -(-len(y_train) // args.batch_size)
    schedule = oar.optimizer.lr.CosineAnnealingDecay(3e-3, T_max=epochs * steps_per_epoch)
    model = oar.Model(net)
    model.prepare(oar.optimizer.Adam(schedule, parameters=net.parameters()), nn.CrossEntropyLoss(),
                  oar.metric.Accuracy())
    start = time.perf_counter()
    model.fit(train_set, batch_size=args.batch_size, epochs=epochs, verbose=1, log_freq=5)
    train_seconds = time.perf_counter() - start

    result = model.evaluate(test_set, batch_size=128, verbose=0)
    accuracy = result["acc"]
    print(f"train time: {train_seconds:.1f} s; test accuracy: {accuracy:.4f} ({len(y_test)} images)")

    out_dir = args.out or tempfile.mkdtemp(prefix="oar_digits_")
    path = os.path.join(out_dir, "digits_cnn.safetensors")
    oar.save(net.state_dict(), path)
    fresh = DigitsCNN()
    fresh.set_state_dict(oar.load(path))
    fresh.eval()
    net.eval()
    x = oar.to_tensor(x_test)
    same = np.array_equal(net(x).numpy(), fresh(x).numpy())
    reloaded = (fresh(x).numpy().argmax(-1) == y_test).mean()
    print(f"saved {path} ({os.path.getsize(path)} bytes); reloaded model: accuracy {reloaded:.4f}, "
          f"predictions {'identical' if same else 'DIFFERENT'}")

    # Deploy: export the inference program (dynamic batch) and run it through
    # oar's static executor; `oar-run <path>` runs the same files from C++.
    program_path = os.path.join(out_dir, "digits_cnn_program")
    oar.jit.save(net, program_path, input_spec=[oar.static.InputSpec([None, 1, 8, 8], "float32", "image")])
    deployed = oar.jit.load(program_path)
    with oar.no_grad():
        static_logits = deployed(x).numpy()
    static_close = np.allclose(static_logits, net(x).numpy(), rtol=1e-4, atol=1e-4)
    print(f"exported {program_path}.json + .safetensors; static program: accuracy "
          f"{(static_logits.argmax(-1) == y_test).mean():.4f}, logits {'match' if static_close else 'DIFFER'}")
    if accuracy < 0.95 or not same or not static_close:
        print("digits_cnn: FAILED (need test accuracy >= 0.95, identical predictions after reload and the "
              "exported program matching eager)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

# The seed article's test_demo.py (PaddlePaddle 3.0's "dynamic-static
# unified auto parallel" demo) on oar: only the two imports differ. Run it
# on two CPU ranks with
#
#     python -m oar.distributed.launch --devices "0,1" examples/python/seed_demo_dist.py
#
# Each rank prints the losses of the four batches (the weight is split by
# columns over the two ranks; the static program of each rank gathers the
# matmul's column pieces before the loss: OAR_LOG_LEVEL=info prints it).
# The block after the demo recomputes the same losses in one process with
# dense tensors and prints both, so the run checks itself
# (scripts/run_demo.sh compares them).
#
# The article's text was not in reach when this was written: the demo is
# rebuilt from its description (ProcessMesh([0, 1], dim_names=["x"]), a
# DemoLayer with a [2, 4] parameter sharded Shard(1), a random Dataset, a
# DataLoader, dist.to_static(layer, loader, loss_fn), eval(), `for data in
# loader()`). The seeds make every rank draw the same data and weight.
import numpy as np

import oar as paddle
import oar.distributed as dist

paddle.seed(2024)
np.random.seed(2024)

mesh = dist.ProcessMesh([0, 1], dim_names=["x"])


class RandomDataset(paddle.io.Dataset):
    def __init__(self, images, labels, num_samples):
        self.images = images
        self.labels = labels
        self.num_samples = num_samples

    def __getitem__(self, idx):
        return self.images[idx], self.labels[idx]

    def __len__(self):
        return self.num_samples


class DemoLayer(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.w0 = dist.shard_tensor(self.create_parameter(shape=[2, 4]), mesh, [dist.Shard(1)])

    def forward(self, x):
        return paddle.matmul(x, self.w0)


images = np.random.rand(8, 2).astype("float32")
labels = np.random.rand(8, 4).astype("float32")
dataset = RandomDataset(images, labels, 8)
loader = paddle.io.DataLoader(dataset, batch_size=2)
layer = DemoLayer()
loss_fn = paddle.nn.MSELoss()
dist_layer = dist.to_static(layer, loader, loss_fn)
dist_layer.eval()
for data in loader():
    loss = dist_layer(data[0], data[1])
    print(loss)

# ---- the dense single-process reference (not part of the article's demo) ----
# The same weight as a whole ordinary tensor, the same batches, the same
# loss, without any distributed tensor: the losses one process computes.
weight = dist.unshard_dtensor(layer.w0).numpy()
dense_losses = []
for data in loader():
    out = paddle.matmul(data[0], paddle.to_tensor(weight))
    dense_losses.append(float(loss_fn(out, data[1]).numpy()))
dist_losses = [float(dist_layer(d[0], d[1])) for d in loader()]
print("dense reference:", " ".join(f"{v:.7f}" for v in dense_losses))
print("distributed:    ", " ".join(f"{v:.7f}" for v in dist_losses))
print("max |difference|:", max(abs(a - b) for a, b in zip(dense_losses, dist_losses)))

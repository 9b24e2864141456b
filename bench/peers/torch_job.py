#!/usr/bin/python3
"""The job qgmd runs, written the way a PyTorch user would write it:
torch.distributed with the gloo backend, one process per node.

Same model (MLP 784-HIDDEN-10, ReLU, PyTorch's default init), same data
(Fashion-MNIST IDX files, normalised with mean 0.2860 and std 0.3530), the
same partition procedure (the official QGM code's Dirichlet-alpha split,
build_non_iid_by_dirichlet, in numpy), the same update rules as qgmd's
(docs/ALGORITHMS.md): QG-DSGDm-N on a ring with weights 1/3, or the
all-reduce baseline (mean gradient, Nesterov momentum); L2 added to the
gradient; the step schedule (x0.1 at 50% and 75% of the run); and the
same evaluation after every epoch: every node's model on the whole test
set, and the averaged model, each rank scoring a slice.

Rank 0 writes qgmd's record names (eval and summary, JSON Lines), so the
benchmarks read both programs' metrics the same way.

    torch_job.py --rank R --world N --master ADDR:PORT [--algorithm ...]
"""
import argparse
import gzip
import json
import os
import time

T0 = time.monotonic()  # before torch's import: start-up includes it

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

MEAN, STD = 0.2860, 0.3530


def read_idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
             for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(data_dir, split):
    def find(stem):
        for name in (stem + ".gz", stem):
            if os.path.exists(os.path.join(data_dir, name)):
                return os.path.join(data_dir, name)
        raise SystemExit("torch_job: no %s in %s" % (stem, data_dir))
    prefix = "train" if split == "train" else "t10k"
    x = read_idx(find(prefix + "-images-idx3-ubyte"))
    y = read_idx(find(prefix + "-labels-idx1-ubyte"))
    x = (x.reshape(len(x), -1).astype(np.float32) / 255.0 - MEAN) / STD
    return x, y.astype(np.int64)


def dirichlet_partition(labels, nodes, alpha, seed):
    """build_non_iid_by_dirichlet of the official QGM code: shuffle, cut
    into chunks served by at most 10 nodes, split every class of a chunk
    by a Dirichlet draw until every node holds at least half its share,
    concatenate, and give each node an equal slice."""
    rng = np.random.RandomState(seed)
    n, classes = len(labels), int(labels.max()) + 1
    idx = rng.permutation(n)
    group = 10
    nchunks = (nodes + group - 1) // group
    step = int(group / nodes * n)
    out, left = [], nodes
    for c in range(nchunks):
        chunk = idx[c * step:n if c + 1 == nchunks else (c + 1) * step]
        k = min(left, group)
        left -= k
        size = len(chunk)
        lists = [[] for _ in range(k)]
        while True:
            lists = [[] for _ in range(k)]
            for cls in range(classes):
                members = chunk[labels[chunk] == cls]
                p = rng.dirichlet(np.repeat(alpha, k))
                p = np.array([q * (len(l) < size / k)
                              for q, l in zip(p, lists)])
                p = p / p.sum()
                cuts = (np.cumsum(p) * len(members)).astype(int)[:-1]
                for j, part in enumerate(np.split(members, cuts)):
                    lists[j] += part.tolist()
            if min(len(l) for l in lists) >= int(0.5 * size / k):
                break
        for l in lists:
            out += l
    share = n // nodes
    return [np.array(out[i * share:(i + 1) * share]) for i in range(nodes)]


def lr_at(step, total, peak, decay_at=(0.5, 0.75), factor=0.1):
    return peak * factor ** sum(step >= int(d * total) for d in decay_at)


class MLP(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, hidden)
        self.fc2 = torch.nn.Linear(hidden, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--master", required=True, help="ADDR:PORT of rank 0")
    ap.add_argument("--algorithm", default="qg-dsgdm-n",
                    choices=["qg-dsgdm-n", "allreduce"])
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--lr-schedule", default="step",
                    choices=["step", "constant"])
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=0,
                    help="evaluate every N steps as well as after every "
                         "epoch (as qgmd's flag)")
    ap.add_argument("--target-accuracy", type=float, default=0.0,
                    help="stop once the averaged model reaches this")
    ap.add_argument("--metrics", default="")
    a = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(a.seed)  # the same initial model on every node
    dist.init_process_group("gloo", init_method="tcp://" + a.master,
                            rank=a.rank, world_size=a.world)
    r, n = a.rank, a.world
    train_x, train_y = load(a.data_dir, "train")
    test_x, test_y = load(a.data_dir, "test")
    shard = dirichlet_partition(train_y, n, a.alpha, a.seed)[r]
    xs = torch.from_numpy(train_x[shard])
    ys = torch.from_numpy(train_y[shard])
    tx, ty = torch.from_numpy(test_x), torch.from_numpy(test_y)
    model = MLP(a.hidden)
    params = list(model.parameters())
    flat = torch.nn.utils.parameters_to_vector(params).detach()
    m = torch.zeros_like(flat)
    beta, wd = a.momentum, a.weight_decay
    steps = len(shard) // a.batch_size
    total = steps * a.epochs
    left, right = (r - 1) % n, (r + 1) % n
    peers = sorted({left, right} - {r})
    recv = {p: torch.empty_like(flat) for p in peers}
    gen = torch.Generator().manual_seed(a.seed * 1000 + r)
    out = open(a.metrics, "w") if a.metrics and r == 0 else None
    startup = time.monotonic() - T0
    dist.barrier()
    start = time.monotonic()
    step = 0
    done = False

    def evaluate(at, epoch, train_loss):
        """The local model on the whole test set, the averaged model on
        this rank's slice; rank 0 writes the record. Every rank sums the
        same whole counts, so all of them see the same accuracy."""
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(flat, params)
            local = (model(tx).argmax(1) == ty).sum().item()
            avg = flat.clone()
            dist.all_reduce(avg)
            avg /= n
            torch.nn.utils.vector_to_parameters(avg, params)
            lo, hi = len(ty) * r // n, len(ty) * (r + 1) // n
            avg_correct = (model(tx[lo:hi]).argmax(1) == ty[lo:hi]).sum().item()
            dist_to_avg = float(((flat - avg) ** 2).sum())
            sums = torch.tensor([local, avg_correct, train_loss, dist_to_avg],
                                dtype=torch.float64)
            dist.all_reduce(sums)
        acc = sums[1].item() / len(ty)
        if out:
            out.write(json.dumps({
                "type": "eval", "epoch": round(epoch, 6), "step": at,
                "wall_s": round(time.monotonic() - start, 3),
                "train_loss": sums[2].item() / n,
                "test_acc_local_mean": sums[0].item() / n / len(ty),
                "test_acc_avg_model": acc,
                "consensus_dist": sums[3].item() / n}) + "\n")
            out.flush()
        return acc

    for epoch in range(1, a.epochs + 1):
        order = torch.randperm(len(shard), generator=gen)
        loss_sum = 0.0
        for s in range(steps):
            lr = a.lr if a.lr_schedule == "constant" else \
                lr_at(step, total, a.lr)
            batch = order[s * a.batch_size:(s + 1) * a.batch_size]
            torch.nn.utils.vector_to_parameters(flat, params)
            model.zero_grad()
            loss = F.cross_entropy(model(xs[batch]), ys[batch])
            loss.backward()
            loss_sum += loss.item()
            g = torch.nn.utils.parameters_to_vector(
                [p.grad for p in params]) + wd * flat
            if a.algorithm == "allreduce":
                dist.all_reduce(g)
                g /= n
                m.mul_(beta).add_(g)
                flat = flat - lr * (g + beta * m)
            else:
                mhat = beta * m + g
                msg = flat - lr * (g + beta * mhat)
                reqs = [dist.irecv(recv[p], src=p) for p in peers]
                reqs += [dist.isend(msg, dst=p) for p in peers]
                for q in reqs:
                    q.wait()
                mixed = msg.clone()
                for p in peers:
                    mixed += (recv[p] - msg) / (len(peers) + 1)
                d = (flat - mixed) / lr
                m.mul_(beta).add_(d, alpha=1 - beta)
                flat = mixed
            step += 1
            if (a.eval_every and step % a.eval_every == 0) or s == steps - 1:
                acc = evaluate(step, step / steps, loss_sum / (s + 1))
                if a.target_accuracy and acc >= a.target_accuracy:
                    done = True
                    break
        if done:
            break
    if out:
        out.write(json.dumps({"type": "summary", "steps": step,
                              "startup_s": round(startup, 3),
                              "wall_s": round(time.monotonic() - start, 3)})
                  + "\n")
        out.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

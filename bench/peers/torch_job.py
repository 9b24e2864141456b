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

`--algorithm ddp` is the same centralized baseline as a PyTorch user at
their best settings runs it: the model wrapped in DistributedDataParallel
(gloo, default bucket size, gradient_as_bucket_view=True, one thread a
rank), DDP's mean gradient through the communication hook of
`--ddp-hook` (none: DDP's all-reduce;
fp16: default_hooks.fp16_compress_hook;
powersgd: powerSGD_hook.powerSGD_hook at rank `--powersgd-rank`, with
error feedback and warm start, PyTorch's defaults), and
torch.optim.SGD(momentum, nesterov=True, weight_decay).
That optimizer is qgmd's all-reduce rule exactly, not an approximation:
with every rank holding the same model, mean(g_i) + wd x is the mean of
qgmd's g_i + wd x; SGD's buffer starts as the first gradient, which is
qgmd's m = beta m + g from m = 0; and its Nesterov step x -= lr (g +
beta m) is qgmd's. Only the rounding differs (the L2 term is added after
the mean instead of before). PowerSGD starts with `--powersgd-start`
steps of plain all-reduce, default 2, the fewest PyTorch accepts with
error feedback or warm start: DDP rebuilds its buckets after the first
step, and the hook's error and factors are kept per bucket.

Rank 0 writes qgmd's record names (eval and summary, JSON Lines), so the
benchmarks read both programs' metrics the same way. The summary's
`bytes_per_step` is what each rank sends per step once any warm-up is
over, computed from the model's shapes, not counted on a socket: the
ring sends its model to each neighbour; an all-reduce of B bytes sends
2(n-1)/n B from each rank, as gloo's ring all-reduce (its algorithm for
CPU tensors) does, where B is 4 bytes a parameter, 2 with fp16, and with
PowerSGD the factors P (R x rows) and Q (R x columns) of every matrix
the hook compresses plus the tensors it leaves whole
(`payload_bytes_per_step` is B, `model_bytes` the model's 4 bytes a
parameter).

    torch_job.py --rank R --world N --master ADDR:PORT [--algorithm ...]
        [--algorithm ddp --ddp-hook none|fp16|powersgd [--powersgd-rank R]]
"""
import argparse
import gc
import gzip
import json
import os
import time

T0 = time.monotonic()  # before torch's import: start-up includes it

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks import (  # noqa: E402
    default_hooks, powerSGD_hook)
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

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


def ddp_model(model, a):
    """The model in DistributedDataParallel with the hook of --ddp-hook.
    Buckets keep DDP's default size; gradient_as_bucket_view=True lets the
    gradients live in the buckets the hook reduces, saving a copy each
    step. Returns the wrapped model and the PowerSGD state (None without
    PowerSGD)."""
    ddp = DistributedDataParallel(model, gradient_as_bucket_view=True)
    state = None
    if a.ddp_hook == "fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif a.ddp_hook == "powersgd":
        state = powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=a.powersgd_rank,
            start_powerSGD_iter=a.powersgd_start, use_error_feedback=True,
            warm_start=True)
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    return ddp, state


def payload_bytes(params, a, min_compression_rate=2):
    """Bytes one rank hands to its exchange each step (after PowerSGD's
    warm-up), from the parameters' shapes. PowerSGD views every tensor as
    rows x (the rest) and sends its factors, R x rows and R x columns
    with R capped by both, only when that is min_compression_rate times
    smaller (PowerSGDState's default and rule); the rest, biases among
    them, goes whole."""
    numel = sum(p.numel() for p in params)
    if a.algorithm != "ddp" or a.ddp_hook == "none":
        return 4 * numel
    if a.ddp_hook == "fp16":
        return 2 * numel
    sent = 0
    for p in params:
        rows = p.shape[0]
        cols = p.numel() // rows
        r = min(rows, cols, a.powersgd_rank)
        low = r * (rows + cols)
        sent += low if low * min_compression_rate < rows * cols \
            else rows * cols
    return 4 * sent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--master", required=True, help="ADDR:PORT of rank 0")
    ap.add_argument("--algorithm", default="qg-dsgdm-n",
                    choices=["qg-dsgdm-n", "allreduce", "ddp"])
    ap.add_argument("--ddp-hook", default="none",
                    choices=["none", "fp16", "powersgd"],
                    help="DDP's communication hook (--algorithm ddp)")
    ap.add_argument("--powersgd-rank", type=int, default=2,
                    help="rank R of PowerSGD's approximation")
    ap.add_argument("--powersgd-start", type=int, default=2,
                    help="steps of plain all-reduce before PowerSGD "
                         "(PyTorch requires at least 2)")
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
    ap.add_argument("--train-limit", type=int, default=0,
                    help="use only the first N training samples, before "
                         "the partition (0 = all; as qgmd's flag)")
    ap.add_argument("--test-limit", type=int, default=0,
                    help="evaluate on only the first N test samples "
                         "(0 = all; as qgmd's flag)")
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
    if a.train_limit > 0:
        train_x, train_y = train_x[:a.train_limit], train_y[:a.train_limit]
    if a.test_limit > 0:
        test_x, test_y = test_x[:a.test_limit], test_y[:a.test_limit]
    shard = dirichlet_partition(train_y, n, a.alpha, a.seed)[r]
    xs = torch.from_numpy(train_x[shard])
    ys = torch.from_numpy(train_y[shard])
    tx, ty = torch.from_numpy(test_x), torch.from_numpy(test_y)
    model = MLP(a.hidden)
    params = list(model.parameters())
    probe = MLP(a.hidden)  # scores a vector; the trained model stays put
    flat = torch.nn.utils.parameters_to_vector(params).detach()
    if a.algorithm == "ddp":
        ddp, powersgd = ddp_model(model, a)
        opt = torch.optim.SGD(params, lr=a.lr, momentum=a.momentum,
                              nesterov=True, weight_decay=a.weight_decay)
    payload = payload_bytes(params, a)
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

    def evaluate(flat, at, epoch, train_loss):
        """The local model on the whole test set, the averaged model on
        this rank's slice; rank 0 writes the record. Every rank sums the
        same whole counts, so all of them see the same accuracy. Both are
        scored by the probe model, so DDP's parameters are never
        replaced."""
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(flat, probe.parameters())
            local = (probe(tx).argmax(1) == ty).sum().item()
            avg = flat.clone()
            dist.all_reduce(avg)
            avg /= n
            torch.nn.utils.vector_to_parameters(avg, probe.parameters())
            lo, hi = len(ty) * r // n, len(ty) * (r + 1) // n
            avg_correct = (probe(tx[lo:hi]).argmax(1) == ty[lo:hi]).sum().item()
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

    def ddp_step(x, y, lr):
        """One step of DDP: backward() averages the gradient through the
        hook, bucket by bucket as it is computed; SGD applies qgmd's
        all-reduce rule to it (the module's docstring)."""
        for group in opt.param_groups:
            group["lr"] = lr
        opt.zero_grad(set_to_none=False)  # the gradients are bucket views
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    def flat_step(flat, x, y, lr):
        """One step of qgmd's rules on the flat model vector: the mean
        gradient with Nesterov momentum, or QG-DSGDm-N's gossip with the
        ring neighbours. Returns the loss and the new vector."""
        torch.nn.utils.vector_to_parameters(flat, params)
        model.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        g = torch.nn.utils.parameters_to_vector(
            [p.grad for p in params]) + wd * flat
        if a.algorithm == "allreduce":
            dist.all_reduce(g)
            g /= n
            m.mul_(beta).add_(g)
            return loss.item(), flat - lr * (g + beta * m)
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
        return loss.item(), mixed

    for epoch in range(1, a.epochs + 1):
        order = torch.randperm(len(shard), generator=gen)
        loss_sum = 0.0
        for s in range(steps):
            lr = a.lr if a.lr_schedule == "constant" else \
                lr_at(step, total, a.lr)
            batch = order[s * a.batch_size:(s + 1) * a.batch_size]
            if a.algorithm == "ddp":
                loss_sum += ddp_step(xs[batch], ys[batch], lr)
                step += 1
                due = (a.eval_every and step % a.eval_every == 0) or \
                    s == steps - 1
                if due:
                    flat = torch.nn.utils.parameters_to_vector(
                        params).detach()
            else:
                loss, flat = flat_step(flat, xs[batch], ys[batch], lr)
                loss_sum += loss
                step += 1
                due = (a.eval_every and step % a.eval_every == 0) or \
                    s == steps - 1
            if due:
                acc = evaluate(flat, step, step / steps, loss_sum / (s + 1))
                if a.target_accuracy and acc >= a.target_accuracy:
                    done = True
                    break
        if done:
            break
    if out:
        # Per rank and step, from the shapes (the module's docstring).
        sent = payload * len(peers) if a.algorithm == "qg-dsgdm-n" \
            else payload * 2 * (n - 1) / n
        summary = {"type": "summary", "steps": step,
                   "startup_s": round(startup, 3),
                   "wall_s": round(time.monotonic() - start, 3),
                   "bytes_per_step": round(sent),
                   "payload_bytes_per_step": payload,
                   "model_bytes": 4 * sum(p.numel() for p in params)}
        if a.algorithm == "ddp":
            summary["ddp_hook"] = a.ddp_hook
            if powersgd:
                summary["powersgd_rank"] = a.powersgd_rank
                summary["powersgd_start"] = a.powersgd_start
        out.write(json.dumps(summary) + "\n")
        out.close()
    if a.algorithm == "ddp":
        # DDP's reducer holds the process group. Were it the last holder,
        # the group's destructor would run under the GIL and wait for a
        # gloo worker that needs the GIL to let go of a tensor (a hang at
        # exit, seen with PowerSGD). Freed first, the group is destroyed
        # by destroy_process_group, which releases the GIL.
        del ddp, opt
        gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""One training step of each model in PyTorch, timed like bench_models.c:
forward, backward and the momentum update (SGD, momentum 0.9, no weight
decay), batch 64, one thread, random data. Prints one line per model:
name, "pytorch", median and quartiles in milliseconds, parameter count.

    /usr/bin/python3 bench/bench_models.py [--steps=N] [model...]
"""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                         nn.Linear(256, 10)), (1, 28, 28)


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10)), (1, 28, 28)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.gn1 = nn.GroupNorm(2, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.gn2 = nn.GroupNorm(2, cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False),
                nn.GroupNorm(2, cout))

    def forward(self, x):
        h = F.relu(self.gn1(self.conv1(x)))
        h = self.gn2(self.conv2(h))
        return F.relu(h + (self.shortcut(x) if self.shortcut else x))


class ResNet20GN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.gn = nn.GroupNorm(2, 16)
        blocks, cin = [], 16
        for stage in range(3):
            cout = 16 << stage
            for i in range(3):
                blocks.append(Block(cin, cout, 2 if i == 0 and stage else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.blocks(F.relu(self.gn(self.conv(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def resnet20_gn():
    return ResNet20GN(), (3, 32, 32)


MODELS = {"mlp": mlp, "lenet": lenet, "resnet20-gn": resnet20_gn}


def bench(name, steps, batch=64):
    torch.manual_seed(1)
    model, shape = MODELS[name]()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, *shape)
    y = torch.randint(0, 10, (batch,))
    times = []
    for s in range(-(steps // 10 + 3), steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()
        if s >= 0:
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    params = sum(p.numel() for p in model.parameters())
    print(f"{name} pytorch {times[steps // 2]:.4f} {times[steps // 4]:.4f} "
          f"{times[3 * steps // 4]:.4f} {params}", flush=True)


def main():
    torch.set_num_threads(1)
    steps, names = 200, []
    for arg in sys.argv[1:]:
        if arg.startswith("--steps="):
            steps = int(arg[8:])
        elif arg in MODELS:
            names.append(arg)
        else:
            sys.exit(f"unknown argument '{arg}'")
    for name in names or list(MODELS):
        bench(name, steps)


if __name__ == "__main__":
    main()

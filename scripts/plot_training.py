"""Plots chorus-train's per-step CSV: loss and batch accuracy against the step, one line per mode."""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def smooth(values, window=50):
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def main(path, png):
    runs = defaultdict(lambda: ([], [], []))
    with open(path) as f:
        for row in csv.DictReader(f):
            steps, losses, accs = runs[row["mode"]]
            steps.append(int(row["step"]))
            losses.append(float(row["loss"]))
            accs.append(float(row["accuracy"]))
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(12, 4.5))
    for mode, (steps, losses, accs) in runs.items():
        ax_loss.plot(steps, smooth(losses), label=mode, linewidth=1)
        ax_acc.plot(steps, smooth(accs), label=mode, linewidth=1)
    ax_loss.set(xlabel="step", ylabel="training loss (mean of 50 steps)", yscale="log")
    ax_acc.set(xlabel="step", ylabel="batch accuracy (mean of 50 steps)")
    for ax in (ax_loss, ax_acc):
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle("chorus-train: MLP 784-256-256-10 on Fashion-MNIST (MoE: 784-256-MoE(8 experts)-10)")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Plots chorus-train's per-step CSV: loss and batch accuracy against the step, one line per mode, and the loss
against wall time of the modes that record it (the parameter server's, whose workers do not keep in step)."""
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
    runs = defaultdict(lambda: ([], [], [], []))
    with open(path) as f:
        for row in csv.DictReader(f):
            steps, losses, accs, seconds = runs[row["mode"]]
            steps.append(int(row["step"]))
            losses.append(float(row["loss"]))
            accs.append(float(row["accuracy"]))
            if row.get("seconds"):
                seconds.append(float(row["seconds"]))
    fig, (ax_loss, ax_acc, ax_time) = plt.subplots(1, 3, figsize=(18, 4.5))
    colors = plt.cm.tab20.colors  # more modes than the default cycle has colors
    for ax in (ax_loss, ax_acc, ax_time):
        ax.set_prop_cycle(color=colors)
    for mode, (steps, losses, accs, seconds) in runs.items():
        ax_loss.plot(steps, smooth(losses), label=mode, linewidth=1)
        ax_acc.plot(steps, smooth(accs), label=mode, linewidth=1)
        if len(seconds) == len(losses):
            ax_time.plot(seconds, smooth(losses), label=mode, linewidth=1)
    ax_loss.set(xlabel="step", ylabel="training loss (mean of 50 steps)", yscale="log")
    ax_acc.set(xlabel="step", ylabel="batch accuracy (mean of 50 steps)")
    ax_time.set(xlabel="wall time of worker 0 (s)", ylabel="training loss (mean of 50 steps)", yscale="log",
                title="parameter server: loss against time")
    for ax in (ax_loss, ax_acc, ax_time):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("chorus-train: MLP 784-256-256-10 on Fashion-MNIST (MoE: 784-256-MoE(8 experts)-10)")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

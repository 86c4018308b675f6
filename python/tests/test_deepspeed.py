"""DeepSpeed's ZeRO stages 1 and 2 on chorus (DeepSpeed from PyPI, on CPU): examples/deepspeed_zero.py under torchrun
on "chorus" and on "gloo", whose losses and trained parameters must agree."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("deepspeed")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PACKAGE = os.environ.get("CHORUS_PYTHON_PATH", os.path.join(ROOT, "build", "python"))


def train(backend, stage, ranks):
    """Each rank's printed lines of the example: its losses per step and its final parameter checksum."""
    env = dict(os.environ, PYTHONPATH=PACKAGE, DS_ACCELERATOR="cpu", CHORUS_TIMEOUT="60")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}",
           os.path.join(ROOT, "examples", "deepspeed_zero.py"), "--backend", backend, "--stage", str(stage),
           "--steps", "6"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{backend} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    # The ranks share the pipe, and an unbuffered print writes its text and its newline apart: lines can run into
    # each other, so each field is matched by its own shape.
    number = r"(-?[0-9.]+(?:e[-+]?[0-9]+)?)"
    steps = re.findall(rf"rank (\d+) step (\d+) loss {number}", done.stdout)
    losses = {(int(r), int(s)): float(v) for r, s, v in steps}
    final = re.findall(rf"rank (\d+) backend ([a-z]+) stage \d+ median step \S+ ms parameters {number}", done.stdout)
    assert len(losses) == 6 * ranks and len(final) == ranks, done.stdout
    assert {b for _, b, _ in final} == {backend}, final
    return losses, {int(r): float(p) for r, _, p in final}


@pytest.mark.parametrize("stage,ranks", [(1, 2), (2, 3)])
def test_zero_matches_gloo(stage, ranks):
    chorus_losses, chorus_params = train("chorus", stage, ranks)
    gloo_losses, gloo_params = train("gloo", stage, ranks)
    # The two libraries may add the ranks' gradients in different orders (three ranks), so float32 sums can differ
    # in their last bits, and Adam carries that forward: 1e-5 relative, over six steps of a small model.
    assert chorus_losses == pytest.approx(gloo_losses, rel=1e-5)
    assert chorus_params == pytest.approx(gloo_params, rel=1e-5)
    # Every rank ends with the same parameters (ZeRO gathered each rank's partition to all).
    assert len(set(chorus_params.values())) == 1, chorus_params

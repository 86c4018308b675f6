"""chorus on a local Ray cluster (a head and a second node on this machine, Ray from PyPI): Ray Train's
TorchTrainer with backend "chorus" and no hook of the program's (the workers find the backend by the package's entry
point) against the same training on Gloo; a worker that dies ends fit() with an error, not a hang; and
ray.util.collective's calls on a "chorus" group against their definitions."""

import json
import os
import sys
import tempfile
import time

import pytest

ray = pytest.importorskip("ray", reason="Ray is not in this Python (python/requirements-test.txt installs it)")
torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))


def installed_package_metadata(root):
    """A dist-info beside the built package, as `pip install` writes it: its entry point is how torch finds the
    backend in a worker that never imports chorus."""
    info = os.path.join(root, "chorus-0.0.0.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: chorus\nVersion: 0.0.0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[torch.distributed.backends]\nchorus = chorus.torch:register\n")


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    package = os.path.abspath(sys.path[1] if "CHORUS_PYTHON_PATH" not in os.environ else
                              os.environ["CHORUS_PYTHON_PATH"])
    metadata = tempfile.mkdtemp(prefix="chorus-ray-")
    installed_package_metadata(metadata)
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    c.add_node(num_cpus=2)
    ray.init(address=c.address, runtime_env={"env_vars": {
        "PYTHONPATH": os.pathsep.join([package, metadata, HERE]), "CHORUS_TIMEOUT": "30"}})
    yield
    ray.shutdown()
    c.shutdown()


def train_loop(config):
    import torch.distributed as dist
    import ray.train

    assert dist.get_backend() == config["backend"], dist.get_backend()
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rank = dist.get_rank()
    gen = torch.Generator().manual_seed(rank)
    for step in range(config["steps"]):
        if step == 1 and rank == config.get("dies", -1):
            os._exit(1)
        x, y = torch.randn(8, 16, generator=gen), torch.randn(8, 4, generator=gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    if rank == 0:  # the nodes share this machine's file system
        with open(config["out"], "w") as f:
            json.dump([p.detach().flatten().tolist() for p in model.parameters()], f)


def fit(backend, steps=5, dies=-1):
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    out = tempfile.mktemp(prefix=f"chorus-ray-{backend}-", suffix=".json")
    trainer = TorchTrainer(
        train_loop, train_loop_config={"backend": backend, "steps": steps, "dies": dies, "out": out},
        torch_config=TorchConfig(backend=backend), scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
        run_config=RunConfig(storage_path=tempfile.mkdtemp(prefix="chorus-ray-train-"),
                             failure_config=FailureConfig(max_failures=0)))
    result = trainer.fit()
    if result.error is not None:
        raise result.error
    with open(out) as f:
        return json.load(f)


def test_torch_trainer_matches_gloo(cluster):
    assert fit("chorus") == fit("gloo")  # 2 ranks: the same sums, bit for bit


def test_a_dead_worker_fails_fit(cluster):
    start = time.monotonic()
    with pytest.raises(Exception):
        fit("chorus", steps=50, dies=1)
    assert time.monotonic() - start < 180


@ray.remote(num_cpus=1)
class Worker:
    def __init__(self):
        import chorus.ray

        chorus.ray.register()

    def run(self, rank, n):
        import numpy as np
        import ray.util.collective as col

        out = {}
        a = np.full(4, rank + 1, dtype=np.float32)
        col.allreduce(a, group_name="g")
        out["allreduce"] = a.tolist()
        t = torch.full((3,), float(rank))
        col.allreduce(t, group_name="g", op=col.types.ReduceOp.MAX)
        out["allreduce_torch_max"] = t.tolist()
        parts = [np.zeros(2, dtype=np.int64) for _ in range(n)]
        col.allgather(parts, np.array([rank, 10 * rank]), group_name="g")
        out["allgather"] = [p.tolist() for p in parts]
        b = np.full(2, rank, dtype=np.float64)
        col.broadcast(b, src_rank=n - 1, group_name="g")
        out["broadcast"] = b.tolist()
        r = np.zeros(2, dtype=np.float32)
        col.reducescatter(r, [np.full(2, rank + i, dtype=np.float32) for i in range(n)], group_name="g")
        out["reducescatter"] = r.tolist()
        if rank == 0:
            col.send(np.arange(5, dtype=np.int32), 1, group_name="g")
        elif rank == 1:
            got = np.zeros(5, dtype=np.int32)
            col.recv(got, 0, group_name="g")
            out["recv"] = got.tolist()
        col.barrier(group_name="g")
        return out


def test_ray_util_collective_chorus_group(cluster):
    import ray.util.collective as col

    import chorus.ray

    chorus.ray.register()
    n = 2
    workers = [Worker.remote() for _ in range(n)]
    col.create_collective_group(workers, n, list(range(n)), backend="chorus", group_name="g")
    results = ray.get([w.run.remote(r, n) for r, w in enumerate(workers)], timeout=120)
    total = sum(r + 1 for r in range(n))
    for rank, out in enumerate(results):
        assert out["allreduce"] == [float(total)] * 4
        assert out["allreduce_torch_max"] == [float(n - 1)] * 3
        assert out["allgather"] == [[r, 10 * r] for r in range(n)]
        assert out["broadcast"] == [float(n - 1)] * 2
        assert out["reducescatter"] == [float(sum(r + rank for r in range(n)))] * 2
    assert results[1]["recv"] == list(range(5))

#!/usr/bin/env python3
"""Ray Train's step time on chorus beside Gloo: TorchTrainer with 2 workers on a local Ray cluster (this machine),
training examples/torch_ddp.py's model under DDP, backend "chorus" and "gloo" in turn (A B A B ...), each a fresh
fit(); each fit reports its median step, and the table gives the median of those.

    .venv/bin/pip install 'ray[train]==2.60.0'    # not in the test environment
    .venv/bin/python perf/ray_train_step.py --repeats 5

The workers find the backend by the package's entry point, as they do where chorus is pip-installed: the script
writes that metadata beside the build's package (build/python) and puts both on the workers' path.
"""
import argparse
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train_loop(config):
    import torch
    import torch.distributed as dist
    from torch_steps import median_step_ms, mlp  # perf/ is on the workers' path

    torch.set_num_threads(1)
    assert dist.get_backend() == config["backend"], dist.get_backend()
    torch.manual_seed(0)
    step_ms = median_step_ms(torch.nn.parallel.DistributedDataParallel(mlp(config["width"])), config["steps"])
    if dist.get_rank() == 0:  # the workers share this machine's file system
        with open(config["out"], "w") as f:
            f.write(str(step_ms))


def fit(backend, args):
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    out = tempfile.mktemp(prefix=f"chorus-ray-step-{backend}-")
    trainer = TorchTrainer(
        train_loop, train_loop_config={"backend": backend, "steps": args.steps, "width": args.width, "out": out},
        torch_config=TorchConfig(backend=backend), scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
        run_config=RunConfig(storage_path=tempfile.mkdtemp(prefix="chorus-ray-step-")))
    result = trainer.fit()
    if result.error is not None:
        raise result.error
    with open(out) as f:
        return float(f.read())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--width", type=int, default=1024, help="hidden width (as examples/torch_ddp.py: 2.4 M parameters)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = p.parse_args()
    import ray

    package = os.path.join(args.build, "python")
    metadata = tempfile.mkdtemp(prefix="chorus-ray-meta-")
    info = os.path.join(metadata, "chorus-0.0.0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: chorus\nVersion: 0.0.0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[torch.distributed.backends]\nchorus = chorus.torch:register\n")
    sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {
        "PYTHONPATH": os.pathsep.join([package, metadata, os.path.dirname(os.path.abspath(__file__))]),
        "OMP_NUM_THREADS": "1"}})
    runs = {"chorus": [], "gloo": []}
    for rep in range(args.repeats):
        for backend in runs:
            runs[backend].append(fit(backend, args))
            print(f"repeat {rep + 1}/{args.repeats} {backend}: median step {runs[backend][-1]:.2f} ms", flush=True)
    ray.shutdown()
    print(f"\nRay Train TorchTrainer, 2 workers, width {args.width}, {args.steps} steps per fit, {args.repeats} fits "
          "per backend interleaved\n")
    print("| backend | median step ms | fits |")
    print("|---|---|---|")
    for backend, steps in runs.items():
        print(f"| {backend} | {statistics.median(steps):.2f} | {', '.join(f'{s:.2f}' for s in steps)} |")


if __name__ == "__main__":
    main()

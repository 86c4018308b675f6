"""PyTorch's own distributed test suite on chorus: the tests torch's CI runs for Gloo on CPU
(torch.testing._internal.distributed.distributed_test's _DistTestBase, spawned as torch's
test/distributed/test_distributed_spawn.py spawns them), with BACKEND chorus, or gloo to compare.

    PYTHONPATH=build/python .venv/bin/python python/tests/torch_suite.py              # every test, chorus, 2 ranks
    BACKEND=gloo PYTHONPATH=build/python .venv/bin/python python/tests/torch_suite.py # the same on Gloo
    ... torch_suite.py -k test_all_gather                                             # unittest's -k filters
    CHORUS_UNDER_GLOO_NAME=1 BACKEND=gloo ... torch_suite.py -k get_future            # Gloo-only tests, on chorus

ctest python_torch_suite runs the tests listed in torch_suite_subset.txt; docs/python.md lists the tests Gloo passes
and chorus does not, with the reason.
"""
import os
import sys
import tempfile

# torch's CI mode (any CI variable) writes XML reports through xmlrunner and fetches lists of disabled and slow
# tests from the network; this driver reports to ctest through its exit status, on a machine that may be offline.
os.environ.pop("CI", None)
os.environ.setdefault("BACKEND", "chorus")
os.environ.setdefault("WORLD_SIZE", "2")
os.environ.setdefault("TEMP_DIR", tempfile.mkdtemp(prefix="chorus-torch-suite-"))

if os.environ["BACKEND"] == "chorus":
    import chorus.torch  # noqa: F401 - registers the backend in the test process and in every spawned rank
    from torch.testing._internal.common_distributed import DistTestCases

    # What the suite asks of a backend before it runs a test: chorus claims what it does on CPU (a third-party
    # backend, DDP, subgroups), not the GPU features; the tests then say whether it does.
    for feature in ("plugin", "ddp", "subgroup"):
        DistTestCases.backend_feature[feature].add("chorus")

if os.environ["BACKEND"] == "gloo" and os.environ.get("CHORUS_UNDER_GLOO_NAME"):
    # The tests the suite runs for Gloo only (it gates them on BACKEND == "gloo"), on chorus: every group the suite
    # asks Gloo for is a chorus group. Tests that check the backend's name fail this way, and only this way.
    import chorus.torch  # noqa: F401
    import torch.distributed as dist

    _init_process_group, _new_group = dist.init_process_group, dist.new_group

    def _on_chorus(backend):
        return "chorus" if str(backend).lower() == "gloo" else backend

    def init_process_group(*args, backend=None, **kwargs):
        return _init_process_group(*args, backend=_on_chorus(backend), **kwargs)

    def new_group(*args, backend=None, **kwargs):
        return _new_group(*args, backend=_on_chorus(backend), **kwargs)

    dist.init_process_group, dist.new_group = init_process_group, new_group

from torch.testing._internal.common_utils import run_tests  # noqa: E402
from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend  # noqa: E402


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()


if __name__ == "__main__":
    run_tests()

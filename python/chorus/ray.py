"""chorus on Ray.

Ray Train: `TorchTrainer(..., torch_config=TorchConfig(backend="chorus"))` needs nothing from this module where the
package is installed on the workers: torch finds the backend by the package's entry point.

ray.util.collective: `chorus.ray.register()` (on the driver and in every actor, before the group is made) adds the
backend "chorus", a group of chorus's own communicator on numpy arrays or CPU torch tensors, without
torch.distributed:

    chorus.ray.register()
    ray.util.collective.create_collective_group(actors, 2, [0, 1], backend="chorus", group_name="g")
    # in each actor: chorus.ray.register(); col.allreduce(array, group_name="g")

The ranks meet through Ray's key-value store: rank 0 makes the communicator's id and publishes it there, the others
read it (for at most CHORUS_TIMEOUT, or `timeout` seconds).
"""

import os
import time

import numpy as np

from . import Communicator, UniqueId

BACKEND = "CHORUS"


def register():
    """Adds the backend "chorus" to ray.util.collective in this process, once."""
    from ray.util.collective.backend_registry import _global_registry, register_collective_backend

    if not _global_registry.is_registered(BACKEND):
        register_collective_backend(BACKEND, _group_class())


def _group_class():
    from ray.experimental import internal_kv
    from ray.util.collective.collective_group.base_collective_group import BaseGroup
    from ray.util.collective.types import ReduceOp

    ops = {ReduceOp.SUM: "sum", ReduceOp.PRODUCT: "prod", ReduceOp.MIN: "min", ReduceOp.MAX: "max"}

    def array(x):
        """The numpy view of a numpy array or CPU torch tensor (ray.util.collective passes them in a list)."""
        if isinstance(x, list):
            if len(x) != 1:
                raise ValueError(f"chorus group: one tensor per call, got {len(x)}")
            x = x[0]
        if isinstance(x, np.ndarray):
            return x
        if type(x).__module__.startswith("torch"):
            if x.device.type != "cpu":
                raise ValueError(f"chorus group: CPU tensors only, got one on {x.device}")
            return x.numpy()
        raise ValueError(f"chorus group: numpy arrays or CPU torch tensors, got {type(x).__name__}")

    def nested(tensor_list):
        """ray.util.collective passes a list of tensors wrapped in a list."""
        return tensor_list[0] if tensor_list and isinstance(tensor_list[0], list) else tensor_list

    class ChorusGroup(BaseGroup):
        """A ray.util.collective group on a chorus communicator."""

        def __init__(self, world_size, rank, group_name, timeout=None):
            super().__init__(world_size, rank, group_name)
            key = f"chorus_collective_group_{group_name}"
            if rank == 0:
                uid = UniqueId.create()
                internal_kv._internal_kv_put(key, uid.to_bytes(), overwrite=True)
            else:
                limit = timeout or float(os.environ.get("CHORUS_TIMEOUT", "300"))
                deadline = time.monotonic() + limit
                while (raw := internal_kv._internal_kv_get(key)) is None:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"chorus group {group_name!r}: rank 0 published no communicator id "
                                           f"within {limit:g} s")
                    time.sleep(0.02)
                uid = UniqueId.from_bytes(raw)
            self._comm = Communicator(uid, world_size, rank)
            if rank == 0:
                internal_kv._internal_kv_del(key)  # every rank has joined: the id served its purpose

        def destroy_group(self):
            self._comm.close()

        @classmethod
        def backend(cls):
            return BACKEND

        @classmethod
        def check_backend_availability(cls):
            return True

        def allreduce(self, tensor, allreduce_options=None):
            op = ops[allreduce_options.reduceOp] if allreduce_options else "sum"
            self._comm.all_reduce(array(tensor), op=op)

        def barrier(self, barrier_options=None):
            self._comm.barrier()

        def reduce(self, tensor, reduce_options=None):
            root = reduce_options.root_rank if reduce_options else 0
            op = ops[reduce_options.reduceOp] if reduce_options else "sum"
            self._comm.reduce(array(tensor), root=root, op=op)

        def allgather(self, tensor_list, tensor, allgather_options=None):
            send = array(tensor)
            outputs = [array(t) for t in nested(tensor_list)]
            gathered = np.empty((self.world_size,) + send.shape, dtype=send.dtype)
            self._comm.all_gather(send, gathered)
            for out, part in zip(outputs, gathered):
                out[...] = part

        def broadcast(self, tensor, broadcast_options=None):
            self._comm.broadcast(array(tensor), root=broadcast_options.root_rank if broadcast_options else 0)

        def reducescatter(self, output_tensor, tensor_list, reducescatter_options=None):
            parts = [array(t) for t in nested(tensor_list)]
            op = ops[reducescatter_options.reduceOp] if reducescatter_options else "sum"
            self._comm.reduce_scatter(np.ascontiguousarray(np.stack(parts)), array(output_tensor), op=op)

        def send(self, tensor, send_options):
            self._comm.send(array(tensor), send_options.dst_rank)

        def recv(self, tensor, recv_options):
            self._comm.recv(array(tensor), recv_options.src_rank)

    return ChorusGroup

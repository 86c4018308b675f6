"""Horovod's PyTorch API over chorus: a Horovod script runs on chorus with its import changed.

    import chorus.horovod as hvd          # instead of: import horovod.torch as hvd
    hvd.init()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

Launch with torchrun (or any launcher that sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; Open MPI's and PMI's
rank variables are read too); init() makes the torch.distributed default group with backend "chorus", or uses the
one the program made. CPU tensors.

DistributedOptimizer allreduces the gradients while backward runs: parameters are packed, in reverse order (about
the order backward produces their gradients), into buckets of HOROVOD_FUSION_THRESHOLD bytes (default 16 MiB), and a
bucket is reduced as soon as all its gradients are in, always in bucket order on every rank. step() waits for them.

Not here: Adasum (ValueError), process sets, sparse gradients (ValueError), autograd through allreduce. join()
matches the DistributedOptimizer's steps of the ranks still training (the joined ones give zeros, and averages
divide by every rank); other collectives wait until join returned on every rank.
"""

import contextlib
import os
import socket

import torch
import torch.distributed as dist


class ReduceOp:
    """Horovod's reduction operations."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"hvd.{self.name}"


Average = ReduceOp("Average")
Sum = ReduceOp("Sum")
Adasum = ReduceOp("Adasum")
Min = ReduceOp("Min")
Max = ReduceOp("Max")
Product = ReduceOp("Product")
_TORCH_OPS = {"Sum": dist.ReduceOp.SUM, "Average": dist.ReduceOp.SUM, "Min": dist.ReduceOp.MIN,
              "Max": dist.ReduceOp.MAX, "Product": dist.ReduceOp.PRODUCT}


class Compression:
    """Gradient compression for allreduce: none, or fp16 (floating tensors travel as float16)."""

    class none:
        @staticmethod
        def compress(tensor):
            return tensor, None

        @staticmethod
        def decompress(tensor, ctx):
            return tensor

    class fp16:
        @staticmethod
        def compress(tensor):
            if tensor.is_floating_point() and tensor.dtype != torch.float16:
                return tensor.to(torch.float16), tensor.dtype
            return tensor, None

        @staticmethod
        def decompress(tensor, ctx):
            return tensor if ctx is None else tensor.to(ctx)


_state = {}


def _env_int(*names):
    for name in names:
        if os.environ.get(name, "") != "":
            return int(os.environ[name])
    return None


def init(comm=None, process_sets=None):
    """Joins the job: the torch.distributed default group if the program made one, else one with backend "chorus"
    from the launcher's environment (RANK/WORLD_SIZE, OMPI_COMM_WORLD_*, PMI_*; MASTER_ADDR/MASTER_PORT)."""
    if comm is not None or process_sets is not None:
        raise ValueError("chorus.horovod.init: comm and process_sets are not supported")
    import chorus.torch  # noqa: F401 - registers the backend

    if not dist.is_initialized():
        rank = _env_int("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "HOROVOD_RANK")
        size = _env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "HOROVOD_SIZE")
        if rank is None and size is None:
            rank, size = 0, 1
        if rank is None or size is None:
            raise ValueError("chorus.horovod.init: the environment gives a rank or a size but not both "
                             "(RANK and WORLD_SIZE under torchrun)")
        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if size == 1 and not port:
            addr, port = "127.0.0.1", _free_port()
        if not addr or not port:
            raise ValueError("chorus.horovod.init: MASTER_ADDR and MASTER_PORT are needed to meet the other ranks "
                             "(torchrun sets them)")
        dist.init_process_group("chorus", init_method=f"tcp://{addr}:{port}", rank=rank, world_size=size)
    rank, size = dist.get_rank(), dist.get_world_size()
    hosts = [None] * size
    dist.all_gather_object(hosts, socket.gethostname())
    mine = hosts[rank]
    host_order = list(dict.fromkeys(hosts))
    _state.update(rank=rank, size=size, local_rank=hosts[:rank].count(mine), local_size=hosts.count(mine),
                  cross_rank=host_order.index(mine), cross_size=len(host_order), optimizers=[], joined=False)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _require_init():
    if not _state:
        raise ValueError("Horovod has not been initialized; use hvd.init().")


def _info(key):
    _require_init()
    return _state[key]


def is_initialized():
    return bool(_state)


def shutdown():
    """Leaves the job: destroys the default group if init() made it."""
    if _state and dist.is_initialized():
        dist.destroy_process_group()
    _state.clear()


def rank():
    return _info("rank")


def size():
    return _info("size")


def local_rank():
    return _info("local_rank")


def local_size():
    return _info("local_size")


def cross_rank():
    return _info("cross_rank")


def cross_size():
    return _info("cross_size")


def nccl_built():
    return False


def mpi_built():
    return False


def gloo_built():
    return False


def _check_op(op, average=None):
    if average is not None:
        op = Average if average else Sum
    op = Average if op is None else op
    if op is Adasum:
        raise ValueError("chorus.horovod: Adasum is not supported; use hvd.Average or hvd.Sum")
    if not isinstance(op, ReduceOp):
        raise ValueError(f"chorus.horovod: unknown op {op!r} (hvd.Average, hvd.Sum, hvd.Min, hvd.Max, hvd.Product)")
    return op


class _Handle:
    def __init__(self, work, finish):
        self.work, self.finish = work, finish


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     compression=Compression.none):
    """Starts an in-place allreduce of `tensor`; synchronize(handle) waits and returns it."""
    _require_init()
    op = _check_op(op, average)
    if tensor.is_sparse:
        raise ValueError("chorus.horovod: sparse tensors are not supported")
    wire, ctx = compression.compress(tensor)
    if prescale_factor != 1.0:
        wire = wire * prescale_factor if wire is not tensor else wire.mul_(prescale_factor)
    work = dist.all_reduce(wire, op=_TORCH_OPS[op.name], async_op=True)
    scale = postscale_factor / (_state["size"] if op is Average else 1)

    def finish():
        out = compression.decompress(wire, ctx)
        if scale != 1.0:
            out = out * scale if out.is_floating_point() else out // int(round(1 / scale))
        if out is not tensor:
            tensor.copy_(out)
        return tensor
    return _Handle(work, finish)


def synchronize(handle):
    """Waits for an async operation and returns its result."""
    handle.work.wait()
    return handle.finish()


def poll(handle):
    """Whether an async operation finished."""
    return handle.work.is_completed()


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               compression=Compression.none):
    """Allreduces `tensor` in place and returns it (op: hvd.Average by default)."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, compression))


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0):
    """A new tensor: `tensor` allreduced over every rank (op: hvd.Average by default)."""
    return allreduce_(tensor.detach().clone(), average, name, op, prescale_factor, postscale_factor, compression)


def allgather(tensor, name=None):
    """A new tensor: every rank's `tensor` concatenated along the first dimension, in rank order; the first
    dimension may differ between ranks, the others must agree."""
    _require_init()
    t = tensor.detach().contiguous()
    if t.dim() == 0:
        t = t.reshape(1)
    lengths = [torch.zeros(1, dtype=torch.int64) for _ in range(_state["size"])]
    dist.all_gather(lengths, torch.tensor([t.shape[0]], dtype=torch.int64))
    lengths = [int(n.item()) for n in lengths]
    longest = max(lengths)
    padded = torch.zeros((longest,) + tuple(t.shape[1:]), dtype=t.dtype)
    padded[: t.shape[0]] = t
    parts = [torch.empty_like(padded) for _ in lengths]
    dist.all_gather(parts, padded)
    return torch.cat([part[:n] for part, n in zip(parts, lengths)])


def broadcast_(tensor, root_rank, name=None):
    """Overwrites `tensor` with root_rank's, in place, and returns it."""
    _require_init()
    dist.broadcast(tensor, src=root_rank)
    return tensor


def broadcast(tensor, root_rank, name=None):
    """A new tensor: root_rank's `tensor`."""
    return broadcast_(tensor.detach().clone(), root_rank)


def broadcast_object(obj, root_rank=0, name=None):
    """root_rank's picklable `obj`, on every rank."""
    _require_init()
    box = [obj if _state["rank"] == root_rank else None]
    dist.broadcast_object_list(box, src=root_rank)
    return box[0]


def allgather_object(obj, name=None):
    """Every rank's picklable `obj`, in rank order."""
    _require_init()
    out = [None] * _state["size"]
    dist.all_gather_object(out, obj)
    return out


def broadcast_parameters(params, root_rank):
    """Overwrites the tensors of `params` (a state_dict, or (name, tensor) pairs such as named_parameters()) with
    root_rank's, in place."""
    _require_init()
    items = sorted(params.items()) if isinstance(params, dict) else list(params)
    for name, p in items:
        if p is None:
            continue
        if not torch.is_tensor(p):
            raise ValueError(f"chorus.horovod.broadcast_parameters: {name} is a {type(p).__name__}, not a tensor")
        with torch.no_grad():
            dist.broadcast(p.data if hasattr(p, "data") else p, src=root_rank)


def broadcast_optimizer_state(optimizer, root_rank):
    """Makes every rank's optimizer state and hyperparameters root_rank's."""
    _require_init()
    state = broadcast_object(optimizer.state_dict() if _state["rank"] == root_rank else None, root_rank)
    if _state["rank"] != root_rank:
        optimizer.load_state_dict(state)


class _Bucket:
    def __init__(self, params):
        self.params = params
        self.ready = 0
        self.pending = None  # (work, flat, contexts) once launched


class _DistributedOptimizer:
    """Mixed into the program's optimizer class by DistributedOptimizer()."""

    def _hvd_setup(self, named_parameters, compression, backward_passes_per_step, op, gradient_predivide_factor):
        self._hvd_op = _check_op(op)
        if gradient_predivide_factor != 1.0 and self._hvd_op is not Average:
            raise ValueError("chorus.horovod: gradient_predivide_factor needs op=hvd.Average")
        self._hvd_compression = compression
        self._hvd_passes = backward_passes_per_step
        self._hvd_predivide = gradient_predivide_factor
        params = [p for group in self.param_groups for p in group["params"] if p.requires_grad]
        if named_parameters is not None:
            named = list(named_parameters)
            names = [n for n, _ in named]
            if len(set(names)) != len(names):
                raise ValueError("chorus.horovod.DistributedOptimizer: named_parameters has duplicate names")
            known = {id(p) for _, p in named}
            missing = [p for p in params if id(p) not in known]
            if missing:
                raise ValueError(f"chorus.horovod.DistributedOptimizer: {len(missing)} of the optimizer's parameters "
                                 "are not in named_parameters")
        fusion = int(os.environ.get("HOROVOD_FUSION_THRESHOLD", 16 << 20))
        self._hvd_buckets, bucket, filled = [], [], 0
        for p in reversed(params):
            if bucket and filled + p.numel() * p.element_size() > fusion:
                self._hvd_buckets.append(_Bucket(bucket))
                bucket, filled = [], 0
            bucket.append(p)
            filled += p.numel() * p.element_size()
        if bucket:
            self._hvd_buckets.append(_Bucket(bucket))
        self._hvd_bucket_of = {id(p): b for b in self._hvd_buckets for p in b.params}
        self._hvd_passes_left = {id(p): backward_passes_per_step for p in params}
        self._hvd_next = 0  # the next bucket to launch: buckets go in order on every rank
        self._hvd_synchronized = False
        self._hvd_should_synchronize = True
        self._hvd_hooks = [p.register_post_accumulate_grad_hook(self._hvd_gradient_ready) for p in params]
        _state["optimizers"].append(self)

    def _hvd_gradient_ready(self, p):
        self._hvd_passes_left[id(p)] -= 1
        if self._hvd_passes_left[id(p)] == 0:
            self._hvd_bucket_of[id(p)].ready += 1
            self._hvd_launch_ready()

    def _hvd_launch_ready(self):
        while self._hvd_next < len(self._hvd_buckets):
            bucket = self._hvd_buckets[self._hvd_next]
            if bucket.ready < len(bucket.params):
                return
            self._hvd_launch(bucket)

    def _hvd_launch(self, bucket, zeros=False):
        parts, contexts = [], []
        for p in bucket.params:
            if p.grad is not None and p.grad.is_sparse:
                raise ValueError("chorus.horovod: sparse gradients are not supported")
            grad = torch.zeros_like(p) if zeros or p.grad is None else p.grad
            wire, ctx = self._hvd_compression.compress(grad.detach())
            parts.append(wire.reshape(-1))
            contexts.append(ctx)
        flat = torch.cat(parts) if len(parts) > 1 else parts[0].clone()
        if self._hvd_predivide != 1.0:
            flat.div_(self._hvd_predivide)
        work = dist.all_reduce(flat, op=_TORCH_OPS[self._hvd_op.name], async_op=True)
        bucket.pending = (work, flat, contexts)
        self._hvd_next += 1

    def synchronize(self):
        """Waits for every bucket's allreduce (launching those backward left, with zeros for gradients it did not
        produce) and writes the results into the gradients."""
        for bucket in self._hvd_buckets[self._hvd_next:]:
            self._hvd_launch(bucket)
        scale = self._hvd_predivide / _state["size"] if self._hvd_op is Average else 1.0
        for bucket in self._hvd_buckets:
            work, flat, contexts = bucket.pending
            work.wait()
            offset = 0
            for p, ctx in zip(bucket.params, contexts):
                n = p.numel()
                reduced = self._hvd_compression.decompress(flat[offset:offset + n], ctx).view_as(p)
                offset += n
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                p.grad.copy_(reduced)
                if scale != 1.0:
                    p.grad.mul_(scale)
            bucket.pending, bucket.ready = None, 0
        self._hvd_next = 0
        for key in self._hvd_passes_left:
            self._hvd_passes_left[key] = self._hvd_passes
        _control(joined=False)
        self._hvd_synchronized = True

    @contextlib.contextmanager
    def skip_synchronize(self):
        """step() inside does not synchronize: the program called synchronize() itself."""
        self._hvd_should_synchronize = False
        try:
            yield
        finally:
            self._hvd_should_synchronize = True

    def step(self, closure=None):
        if self._hvd_should_synchronize and not self._hvd_synchronized:
            self.synchronize()
        self._hvd_synchronized = False
        return super().step(closure)

    def zero_grad(self, set_to_none=True):
        if any(b.pending is not None for b in self._hvd_buckets):
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but before "
                                 "optimizer.step() or optimizer.synchronize(); that would lose the gradients being "
                                 "allreduced")
        return super().zero_grad(set_to_none=set_to_none)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0, num_groups=0,
                         groups=None, sparse_as_dense=False, process_set=None):
    """`optimizer`, whose step() first averages (op) the gradients over every rank; the allreduces run while
    backward does. The result is an instance of the optimizer's own class."""
    _require_init()
    if groups is not None or num_groups or process_set is not None:
        raise ValueError("chorus.horovod.DistributedOptimizer: groups and process sets are not supported")
    cls = type(optimizer.__class__.__name__, (_DistributedOptimizer, optimizer.__class__), {})
    wrapped = cls.__new__(cls)
    wrapped.__dict__.update(optimizer.__dict__)
    wrapped._hvd_setup(named_parameters, compression, backward_passes_per_step, op, gradient_predivide_factor)
    return wrapped


def _control(joined):
    """Ends every step of a DistributedOptimizer, and every round of join(), on every rank alike: how many ranks have
    joined, and which of them joined last (the latest round, then the highest rank)."""
    rounds = _state.setdefault("rounds", 0)
    if joined and "joined_at" not in _state:
        _state["joined_at"] = rounds
    size = _state["size"]
    joined_at = torch.zeros(size, dtype=torch.int64)  # per rank: 0 while training, else 1 + the round it joined in
    if joined:
        joined_at[_state["rank"]] = _state["joined_at"] + 1
    dist.all_reduce(joined_at)
    _state["rounds"] = rounds + 1
    order = joined_at * size + torch.arange(size)
    return int((joined_at > 0).sum().item()), int(order.argmax().item())


def join(device=-1):
    """This rank has no more data: it takes part, with zero gradients, in the steps of the ranks still training
    (those of the last DistributedOptimizer made), and returns, on every rank, once all have joined: the rank that
    joined last."""
    _require_init()
    optimizer = _state["optimizers"][-1] if _state["optimizers"] else None
    try:
        while True:
            if optimizer is not None:
                for bucket in optimizer._hvd_buckets:
                    optimizer._hvd_launch(bucket, zeros=True)
                for bucket in optimizer._hvd_buckets:
                    bucket.pending[0].wait()
                    bucket.pending, bucket.ready = None, 0
                optimizer._hvd_next = 0
            joined, last = _control(joined=True)
            if joined == _state["size"]:
                return last
    finally:
        _state.pop("joined_at", None)

"""AllReduce and AllGather of numpy arrays from Python, one process per rank.

    PYTHONPATH=build/python .venv/bin/torchrun --standalone --nproc-per-node 2 examples/python_allreduce.py
    (or mpirun -np 2, srun -n 2: any launcher chorus reads, see the docs' Perf tools page)
"""

import numpy as np

import chorus

comm = chorus.Communicator.from_environment()  # torchrun, mpirun, srun; or Communicator(uid, n, rank)
x = np.full(1 << 20, comm.rank + 1, np.float32)
comm.all_reduce(x)  # in place; any numpy array or torch CPU tensor, no copies
req = comm.all_gather(x, out := np.empty(comm.size * x.size, np.float32), async_op=True)
req.wait()  # chorus.Error (with .code) if it failed
total = comm.size * (comm.size + 1) / 2
if not ((x == total).all() and (out == total).all()):
    raise SystemExit(f"rank {comm.rank}: wrong result")
print(f"rank {comm.rank} of {comm.size}: AllReduce gave {total:g} everywhere")
comm.close()

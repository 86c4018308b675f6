"""Runs a test body on N processes (spawned, one rank each) and reports every rank's failure."""

import multiprocessing
import os
import socket
import traceback


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(body, rank, nranks, port, args, errors):
    try:
        body(rank, nranks, port, *args)
    except BaseException:  # noqa: BLE001 - every failure goes back to the test
        errors.put((rank, traceback.format_exc()))


def run_ranks(body, nranks, *args, timeout=120, expect_exit=None):
    """Runs body(rank, nranks, port, *args) on `nranks` processes; fails with each failing rank's traceback.
    expect_exit: ranks whose process is meant to die (a killed-rank test), not reported."""
    # On a group's first failed call, torch's flight recorder (an abort hook) symbolizes every recorded stack: seconds,
    # and more on a loaded machine, which the tests' bounds on how soon a failure is raised do not measure.
    os.environ.setdefault("TORCH_INCLUDE_STACK_TRACE", "0")
    ctx = multiprocessing.get_context("spawn")
    errors = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_rank_main, args=(body, r, nranks, port, args, errors)) for r in range(nranks)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
    hung = [r for r, p in enumerate(procs) if p.is_alive()]
    for p in procs:
        if p.is_alive():
            p.kill()
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    expect_exit = expect_exit or set()
    died = [r for r, p in enumerate(procs) if r not in expect_exit and p.exitcode not in (0, None)]
    report = "".join(f"--- rank {r} ---\n{tb}" for r, tb in sorted(failures))
    assert not hung, f"ranks {hung} still ran after {timeout} s\n{report}"
    assert not failures and not died, f"ranks failed (exit codes {[p.exitcode for p in procs]}):\n{report}"

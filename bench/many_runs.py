"""Throughput of many runs at once in one process: N threads cycling concurrently on one
checkpointer, against the same N threads run one after another.

    .venv-bench/bin/python bench/many_runs.py [--threads 32] [--cycles 10]
        [--backend sqlite|postgres|memory] [--fsyncs]

Each of the ``--threads`` threads runs ``--cycles`` cycles of the benchmark's scenario
(``scenario.py``: pause on ``write_file``, approve, tool runs, final answer) through the async
API on one event loop: first one thread after another ("sequential"), then all at once
("concurrent", ``asyncio.gather``), each on a fresh store. Every approval must run the tool
exactly once (checked). Prints cycles per second of both and their ratio, the CPU per cycle of
the process and (on Linux) of its threads: the event loop's, the store's worker thread
(SQLite) and the tool threads; with ``--fsyncs``
(SQLite, needs strace) it also counts ``fsync``/``fdatasync`` calls per cycle of each mode in
a child process. This is a benchmark, not a test: it is not run by CI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pg_util  # noqa: E402
from il_side import APPROVE, InterlockSystem  # noqa: E402
from scenario import FINAL_TEXT, USER_TEXT, machine_info  # noqa: E402

DEFAULT_DSN = os.environ.get("INTERLOCK_BENCH_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def make(backend: str, workdir: Path, tag: str, dsn: str) -> InterlockSystem:
    path = workdir / f"concurrent-{tag}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    schema = f"bench_il_conc_{tag}"
    if backend == "postgres":
        pg_util.reset_schema(dsn, schema)
    s = InterlockSystem(backend, sqlite_path=str(path), pg_dsn=dsn, pg_schema=schema)
    s.open()
    return s


async def cycles(s: InterlockSystem, thread_id: str, n: int) -> None:
    for _ in range(n):
        out = await s.agent.ainvoke(USER_TEXT, thread_id=thread_id)
        if not out.interrupted:
            raise AssertionError(f"{thread_id} did not pause")
        out = await s.agent.aresume(thread_id, decisions=APPROVE)
        if out.output != FINAL_TEXT:
            raise AssertionError(f"{thread_id} did not complete")
        s.model.calls.clear()


async def run_mode(s: InterlockSystem, mode: str, threads: int, n: int) -> float:
    t0 = time.perf_counter()
    if mode == "sequential":
        for i in range(threads):
            await cycles(s, f"t{i}", n)
    else:
        await asyncio.gather(*(cycles(s, f"t{i}", n) for i in range(threads)))
    elapsed = time.perf_counter() - t0
    if s.counter.count != threads * n:
        raise AssertionError(f"{mode}: the tool ran {s.counter.count} times, not {threads * n}")
    return elapsed


def _thread_kind(name: str) -> str:
    if name == "MainThread":
        return "event loop"
    if name.startswith("interlock-sqlite"):
        return "store"
    if name.startswith("interlock-tool"):
        return "tools"
    return "other"


def thread_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) each live thread of this process has used so far, by its
    id, with its kind, read from ``/proc/self/task`` (empty where there is none). Threads are
    told apart by their Python names: the main thread runs the event loop,
    ``interlock-sqlite`` is the SQLite store's worker, ``interlock-tool`` the pool that runs
    sync tools."""
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[str, float]] = {}
    for t in threading.enumerate():
        if t.native_id is None:
            continue
        try:
            fields = (tasks / str(t.native_id) / "stat").read_text().rsplit(")", 1)[1]
            used = fields.split()
            out[t.native_id] = (_thread_kind(t.name), (int(used[11]) + int(used[12])) / tick)
        except (OSError, IndexError, ValueError):
            continue
    return out


def cpu_split(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]
              ) -> dict[str, float]:
    """CPU seconds used between two :func:`thread_cpu` readings, summed by kind of thread
    (a thread that ended in between is not counted)."""
    out: dict[str, float] = {}
    for tid, (kind, used) in after.items():
        out[kind] = out.get(kind, 0.0) + used - before.get(tid, (kind, 0.0))[1]
    return out


def measure(backend: str, mode: str, threads: int, n: int, workdir: Path, dsn: str
            ) -> tuple[float, float, dict[str, float]]:
    """Seconds the run took, the CPU seconds (user + system, all threads) this process spent
    meanwhile, and how they split by kind of thread (see :func:`thread_cpu`)."""
    s = make(backend, workdir, mode, dsn)
    try:
        asyncio.run(cycles(s, "warm-up", 3))
        s.counter.count = 0
        t0, by0 = os.times(), thread_cpu()
        elapsed = asyncio.run(run_mode(s, mode, threads, n))
        t1, by1 = os.times(), thread_cpu()
        return elapsed, (t1.user - t0.user) + (t1.system - t0.system), cpu_split(by0, by1)
    finally:
        s.close()
        if backend == "postgres":
            pg_util.drop_schema(dsn, f"bench_il_conc_{mode}")


def count_fsyncs(mode: str, threads: int, n: int) -> float:
    """fsync + fdatasync per cycle of ``mode`` on SQLite: a run with ``n`` cycles per thread
    minus one with 1, under ``strace -f -c``."""
    totals = []
    for cyc in (1, n):
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "strace.txt"
            subprocess.run(
                ["strace", "-f", "-c", "-o", str(out), "-e", "trace=fsync,fdatasync",
                 sys.executable, __file__, "--child", mode, str(threads), str(cyc), d],
                check=True, stdout=subprocess.DEVNULL)
            calls = 0
            for line in out.read_text().splitlines():
                cols = line.split()
                if cols and cols[-1] in ("fsync", "fdatasync") and re.fullmatch(r"\d+", cols[3]):
                    calls += int(cols[3])
            totals.append(calls)
    return (totals[1] - totals[0]) / (threads * (n - 1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=32)
    p.add_argument("--cycles", type=int, default=10, help="cycles per thread")
    p.add_argument("--backend", default="sqlite", choices=["memory", "sqlite", "postgres"])
    p.add_argument("--pg-dsn", default=DEFAULT_DSN)
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds of both modes")
    p.add_argument("--fsyncs", action="store_true", help="count fsyncs per cycle (strace)")
    p.add_argument("--out", default=str(HERE / "results" / "many_runs.json"))
    p.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        mode, threads, n, d = a.child
        measure("sqlite", mode, int(threads), int(n), Path(d), a.pg_dsn)
        return 0
    info = machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, load "
          f"average {tuple(round(x, 2) for x in info['loadavg'])}")
    print(f"{a.threads} threads x {a.cycles} cycles, {a.backend}, {a.rounds} alternating rounds")
    results: dict[str, list[float]] = {"sequential": [], "concurrent": []}
    cpu: dict[str, list[float]] = {"sequential": [], "concurrent": []}
    by_thread: dict[str, list[dict[str, float]]] = {"sequential": [], "concurrent": []}
    n_cycles = a.threads * a.cycles
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            order = ("sequential", "concurrent") if r % 2 == 0 else ("concurrent", "sequential")
            for mode in order:
                elapsed, used, split = measure(a.backend, mode, a.threads, a.cycles, Path(d),
                                               a.pg_dsn)
                rate = n_cycles / elapsed
                results[mode].append(rate)
                cpu[mode].append(used / n_cycles * 1e3)
                by_thread[mode].append({k: v / n_cycles * 1e3 for k, v in split.items()})
                threads_text = ", ".join(f"{k} {v:.2f}" for k, v in sorted(
                    by_thread[mode][-1].items(), key=lambda kv: -kv[1]) if v > 0)
                print(f"  round {r + 1} {mode:10s} {rate:8.1f} cycles/s ({elapsed:.2f} s; CPU "
                      f"{cpu[mode][-1]:.2f} ms per cycle"
                      + (f", by thread: {threads_text}" if threads_text else "")
                      + f"; load {os.getloadavg()[0]:.1f})")
    best = {m: statistics.median(v) for m, v in results.items()}
    best_cpu = {m: statistics.median(v) for m, v in cpu.items()}
    ratio = best["concurrent"] / best["sequential"]
    out: dict[str, Any] = {"machine": info, "backend": a.backend, "threads": a.threads,
                           "cycles": a.cycles, "rates": results, "median": best,
                           "ratio": ratio, "cpu_ms_per_cycle": cpu,
                           "cpu_median_ms": best_cpu, "cpu_by_thread_ms_per_cycle": by_thread,
                           "loadavg_end": os.getloadavg()}
    print(f"median: sequential {best['sequential']:.1f} cycles/s, concurrent "
          f"{best['concurrent']:.1f} cycles/s → {ratio:.2f}x (target ≥3x); CPU per cycle "
          f"(user + system, all threads): sequential {best_cpu['sequential']:.2f} ms, "
          f"concurrent {best_cpu['concurrent']:.2f} ms")
    if a.fsyncs and a.backend == "sqlite":
        if shutil.which("strace") is None:
            print("strace is not installed (Debian: apt-get install strace)")
        else:
            out["fsyncs_per_cycle"] = {m: count_fsyncs(m, a.threads, a.cycles)
                                       for m in ("sequential", "concurrent")}
            f = out["fsyncs_per_cycle"]
            print(f"fsync+fdatasync per cycle: sequential {f['sequential']:.2f}, concurrent "
                  f"{f['concurrent']:.2f}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""interlock vs LangChain ``create_agent`` + ``HumanInTheLoopMiddleware``: one entry point.

    .venv-bench/bin/python bench/run.py [--backends memory,sqlite,postgres] [--quick]

Runs the same scripted scenario (see ``scenario.py``) on both systems, on each backend, in one
run, and prints every figure with the ratio LangChain / interlock:

  (cycle) the cost of one approval cycle against its physical floor and the peers, with the
      issue-34 targets met or missed: instructions per cycle (callgrind), CPU and wall time,
      the SQLite cycle against a bare sqlite3 loop of the same commits and reads, the cold
      resume against its floor, bytes per cycle, and CPU per cycle against LangChain,
      Pydantic AI and the OpenAI Agents SDK (``cycle_cost.py``, in processes of its own; its
      JSON is kept as ``cycle-YYYY-MM-DD-HHMM.json`` next to this run's);
  (a) one cycle on a fresh thread: median and p95;
  (b) one thread, K cycles: time of the K-th cycle and bytes stored, for K = 10, 50, 200;
      and K = 200 against K = 10 again with each system alone in a new process;
  (c) cold resume of a thread with 50 cycles of history, from a new process;
  (d) N threads paused at once (10,000; 1,000 with --quick), each system in its own process:
      time to create, bytes, peak RSS growth, time to resume one at random;
  (e) in memory, the same cycle on four systems side by side: interlock, LangChain, Pydantic AI
      (deferred tools with ``requires_approval``) and the OpenAI Agents SDK (``needs_approval``,
      ``RunState`` stored as JSON and loaded back); see ``peers.py``;
  plus the time of ``import interlock`` / ``import langchain.agents`` in a fresh process;
  (workers) on Postgres, interlock alone: one combined server against an API-only server with
      two worker processes, decisions per second from 50 concurrent HTTP clients, each
      approval's tool counted, and a worker killed mid-tool (see ``workers.py``);
  (sse) 200 SSE subscribers of one ``interlock serve`` process: idle CPU and how long until
      every subscriber saw a decision (``sse_fanout.py``; interlock alone);
  (many) 32 threads cycling at once in one process on SQLite against the same 32 one after
      another: cycles/s and fsyncs per cycle (``many_runs.py``; interlock alone);
  (inbox) 1,000 / 10,000 / 100,000 waiting requests on SQLite and Postgres: the API's first
      page, a text search only the oldest request matches, a reviewer's first page, and the
      web inbox in headless Chromium (``scale_inbox.py``; interlock alone);
  (scale) 0 and 100,000 waiting requests on SQLite and Postgres: startup and RSS of
      ``interlock serve``, its idle CPU with no client and right after a burst of 10,000
      changes, and the API's pages and count (``scale.py``; interlock alone).

Figures (a) and (b) run both systems in this process, alternating in blocks of cycles so that
machine noise hits both alike. Results go to ``bench/results/latest.json`` (and the full
per-cycle data to ``bench/results/raw/``); ``bench/plots.py`` draws the PNGs from them.
This is a benchmark, not a test: it is not run by CI.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import pg_util  # noqa: E402
from il_side import InterlockSystem  # noqa: E402
from lc_side import LangChainSystem, sqlite_default_synchronous  # noqa: E402
from peers import OpenAIAgentsSystem, PydanticAISystem  # noqa: E402
from scenario import cycle, machine_info, percentile  # noqa: E402

DEFAULT_DSN = os.environ.get("INTERLOCK_BENCH_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
SYSTEMS = ("langchain", "interlock")

CYCLE_TARGET = {"memory": 10.0, "sqlite": 10.0, "postgres": 5.0}
TARGETS: dict[str, Any] = {
    "cycle_ratio": CYCLE_TARGET,
    "bytes_ratio_50": 50.0,
    "linear_growth": 1.5,
    "cold_resume_ratio": 10.0,
    "rss_growth_mb": 50.0,
    "import_s": 0.3,
    "peer_cycle_ratio": 10.0,
}
PEERS = ("interlock", "langchain", "pydantic-ai", "openai-agents")


def log(msg: str = "") -> None:
    print(msg, flush=True)


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick: bool = args.quick
        self.dsn: str = args.pg_dsn
        self.workdir = Path(args.workdir or tempfile.mkdtemp(prefix="interlock-bench-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.a_cycles = 40 if self.quick else 200
        self.a_warmup = 10 if self.quick else 20
        self.b_kmax = 50 if self.quick else 200
        self.b_marks = [10, 50] if self.quick else [10, 50, 200]
        self.c_history = 50
        self.c_reps = 2 if self.quick else 5
        self.d_threads = args.threads or (1000 if self.quick else 10_000)
        self.d_resumes = 5 if self.quick else 20
        self.import_reps = 3 if self.quick else 7
        if args.smoke:  # checks that everything runs; the numbers mean nothing
            self.a_cycles, self.a_warmup, self.b_kmax, self.b_marks = 4, 2, 10, [10]
            self.c_history, self.c_reps, self.d_resumes, self.import_reps = 5, 2, 2, 2
            self.d_threads = args.threads or 20
        self.results: dict[str, Any] = {}
        self.raw: dict[str, Any] = {}

    # -- helpers ------------------------------------------------------------------------------

    def make(self, system: str, backend: str, tag: str) -> Any:
        path = str(self.workdir / f"{system}-{tag}.db")
        for suffix in ("", "-wal", "-shm"):
            Path(path + suffix).unlink(missing_ok=True)
        schema = f"bench_{'lg' if system == 'langchain' else 'il'}_{tag}"
        if backend == "postgres":
            pg_util.reset_schema(self.dsn, schema)
        if system == "langchain":
            return LangChainSystem(backend, sqlite_path=path, pg_dsn=self.dsn, pg_schema=schema)
        s = InterlockSystem(backend, sqlite_path=path, pg_dsn=self.dsn, pg_schema=schema,
                            async_tool=self.args.async_tool and tag in ("a", "b"))
        s.open()
        return s

    def child_args(self, system: str, backend: str, tag: str) -> list[str]:
        out = []
        if backend == "sqlite":
            out += ["--sqlite-path", str(self.workdir / f"{system}-{tag}.db")]
        if backend == "postgres":
            out += ["--pg-dsn", self.dsn,
                    "--pg-schema", f"bench_{'lg' if system == 'langchain' else 'il'}_{tag}"]
        return out

    def run_child(self, script: str, name: str, backend: str, tag: str,
                  args: list[str]) -> dict[str, Any]:
        """Run ``script`` for system ``name`` on a fresh store of its own (file or schema
        ``tag``) in a new process; the JSON of its last line."""
        path = self.workdir / f"{name}-{tag}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        if backend == "postgres":
            pg_util.reset_schema(self.dsn, f"bench_{'lg' if name == 'langchain' else 'il'}_{tag}")
        cmd = [sys.executable, str(HERE / script), "--system", name, "--backend", backend,
               *args, *self.child_args(name, backend, tag)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{script} failed:\n{proc.stderr}")
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        return result

    def freeze(self) -> None:
        if self.args.gc_freeze:
            gc.collect()
            gc.freeze()

    def unfreeze(self) -> None:
        if self.args.gc_freeze:
            gc.unfreeze()
            gc.collect()

    # -- (a) ----------------------------------------------------------------------------------

    def fig_a(self, backend: str) -> None:
        log(f"\n(a) one cycle, fresh thread each time — {backend}: {self.a_cycles} cycles per "
            f"system after {self.a_warmup} warm-up cycles, in alternating blocks of 20")
        systems = {s: self.make(s, backend, "a") for s in SYSTEMS}
        for name, s in systems.items():
            for i in range(self.a_warmup):
                cycle(s, f"warm-{i}")
            self.results.setdefault("durability", {}).setdefault(backend, {})[name] = \
                s.describe_durability()
        self.freeze()
        times: dict[str, list[float]] = {s: [] for s in SYSTEMS}
        pause: dict[str, list[float]] = {s: [] for s in SYSTEMS}
        resume: dict[str, list[float]] = {s: [] for s in SYSTEMS}
        block = 20
        for start in range(0, self.a_cycles, block):
            order = SYSTEMS if (start // block) % 2 == 0 else SYSTEMS[::-1]
            for name in order:
                for i in range(start, min(start + block, self.a_cycles)):
                    p, r = cycle(systems[name], f"a-{i}")
                    times[name].append(p + r)
                    pause[name].append(p)
                    resume[name].append(r)
        out: dict[str, Any] = {}
        for name in SYSTEMS:
            out[name] = {
                "median_ms": statistics.median(times[name]) * 1e3,
                "p95_ms": percentile(times[name], 95) * 1e3,
                "pause_median_ms": statistics.median(pause[name]) * 1e3,
                "resume_median_ms": statistics.median(resume[name]) * 1e3,
                "min_ms": min(times[name]) * 1e3,
            }
            systems[name].close()
        self.unfreeze()
        out["ratio_median"] = out["langchain"]["median_ms"] / out["interlock"]["median_ms"]
        out["ratio_p95"] = out["langchain"]["p95_ms"] / out["interlock"]["p95_ms"]
        out["target"] = CYCLE_TARGET[backend]
        self.results.setdefault("a", {})[backend] = out
        self.raw.setdefault("a", {})[backend] = {n: times[n] for n in SYSTEMS}
        for name in SYSTEMS:
            o = out[name]
            log(f"  {name:10s} median {o['median_ms']:8.3f} ms   p95 {o['p95_ms']:8.3f} ms   "
                f"(to pause {o['pause_median_ms']:.3f}, approve→answer "
                f"{o['resume_median_ms']:.3f})")
        log(f"  ratio LangChain/interlock: median {out['ratio_median']:.1f}x, p95 "
            f"{out['ratio_p95']:.1f}x  (target ≥{out['target']:.0f}x: "
            f"{verdict(out['ratio_median'] >= out['target'])})")
        del systems
        gc.collect()

    # -- (b) ----------------------------------------------------------------------------------

    def fig_b(self, backend: str) -> None:
        kmax = self.b_kmax
        log(f"\n(b) one thread, {kmax} cycles — {backend}")
        systems = {s: self.make(s, backend, "b") for s in SYSTEMS}
        every = 5 if kmax <= 50 else 10
        quarter = kmax // 4
        measure_at = sorted({1, 5, *range(every, kmax + 1, every), *self.b_marks, quarter,
                             kmax - quarter})
        times: dict[str, list[float]] = {s: [] for s in SYSTEMS}
        cpu: dict[str, list[float]] = {s: [] for s in SYSTEMS}
        sizes: dict[str, dict[int, int]] = {s: {0: systems[s].stored_bytes()} for s in SYSTEMS}
        self.freeze()
        # blocks of `every` cycles per system, alternating which system goes first
        for start in range(0, kmax, every):
            order = SYSTEMS if (start // every) % 2 == 0 else SYSTEMS[::-1]
            for name in order:
                for k in range(start + 1, min(start + every, kmax) + 1):
                    c0 = time.process_time()
                    p, r = cycle(systems[name], "the-thread")
                    cpu[name].append(time.process_time() - c0)
                    times[name].append(p + r)
                    if k in measure_at:
                        sizes[name][k] = systems[name].stored_bytes()
        self.unfreeze()
        out: dict[str, Any] = {"marks": {}}
        for k in self.b_marks:
            row: dict[str, Any] = {}
            for name in SYSTEMS:
                window = times[name][max(0, k - 5):k]
                row[name] = {
                    "cycle_ms": times[name][k - 1] * 1e3,
                    "cycle_median5_ms": statistics.median(window) * 1e3,
                    "cpu_median5_ms": statistics.median(cpu[name][max(0, k - 5):k]) * 1e3,
                    "bytes": sizes[name][k],
                }
            row["ratio_time"] = (row["langchain"]["cycle_median5_ms"]
                                 / row["interlock"]["cycle_median5_ms"])
            row["ratio_bytes"] = row["langchain"]["bytes"] / row["interlock"]["bytes"]
            out["marks"][str(k)] = row
        growth: dict[str, Any] = {}
        for name in SYSTEMS:
            first = sizes[name][quarter] - sizes[name][0]
            last = sizes[name][kmax] - sizes[name][kmax - quarter]
            growth[name] = {"first": first, "last": last, "ratio": last / first if first else 0}
        out["growth"] = growth
        out["growth_window"] = quarter
        out["sizes"] = {n: {str(k): v for k, v in sizes[n].items()} for n in SYSTEMS}
        self.results.setdefault("b", {})[backend] = out
        self.raw.setdefault("b", {})[backend] = {"times": times, "sizes": out["sizes"]}
        for k in self.b_marks:
            row = out["marks"][str(k)]
            lc, il = row["langchain"], row["interlock"]
            log(f"  K={k:<4d} cycle K (median of cycles K-4..K): LangChain "
                f"{lc['cycle_median5_ms']:8.2f} ms, interlock {il['cycle_median5_ms']:7.2f} ms "
                f"({row['ratio_time']:.1f}x)   bytes: LangChain {fmt_bytes(lc['bytes'])}, "
                f"interlock {fmt_bytes(il['bytes'])} ({row['ratio_bytes']:.1f}x)")
        if 50 in self.b_marks:
            r50 = out["marks"]["50"]["ratio_bytes"]
            log(f"  bytes after 50 cycles, LangChain/interlock: {r50:.1f}x (target ≥50x vs "
                f"SqliteSaver: {verdict(r50 >= 50) if backend == 'sqlite' else 'n/a here'})")
        if 10 in self.b_marks and kmax in self.b_marks:
            for name in SYSTEMS:
                lo, hi = out["marks"]["10"][name], out["marks"][str(kmax)][name]
                log(f"  {name:10s} cycle K={kmax} / K=10: wall "
                    f"{hi['cycle_median5_ms'] / lo['cycle_median5_ms']:.2f}x, CPU time "
                    f"{hi['cpu_median5_ms'] / lo['cpu_median5_ms']:.2f}x "
                    f"({lo['cpu_median5_ms']:.2f} → {hi['cpu_median5_ms']:.2f} ms)")
        if 10 in self.b_marks and kmax in self.b_marks:
            out["alone"] = self.fig_b_alone(backend, kmax)
        for name in SYSTEMS:
            g = growth[name]
            log(f"  {name:10s} growth: first {quarter} cycles {fmt_bytes(g['first'])}, last "
                f"{quarter} of {kmax} {fmt_bytes(g['last'])} → {g['ratio']:.2f}x"
                + (f" (target ≤1.5x: {verdict(g['ratio'] <= 1.5)})" if name == "interlock"
                   else ""))
        for s in systems.values():
            s.close()
        del systems
        gc.collect()

    def fig_b_alone(self, backend: str, kmax: int) -> dict[str, Any]:
        """Cycle K=kmax against K=10 with each system alone in a new process (see
        ``long_thread_child.py``: in the shared process each side's garbage collections walk
        the other's growing heap). The child holds T threads at each K and measures them in
        pairs, a cycle at K=10 right next to one at K=kmax, R rounds; reported are the ratio of
        the medians and the median of the per-pair ratios, for wall and CPU time."""
        k_lo = 10 if kmax > 10 else max(1, kmax // 2)
        if self.args.smoke:
            shape = dict.fromkeys(SYSTEMS, (2, 1))
        else:  # (threads, rounds): LangChain's threads cost far more to build
            shape = {"interlock": (12, 3), "langchain": (4, 4)}
        out: dict[str, Any] = {}
        raw: dict[str, Any] = {}
        for name in SYSTEMS:
            threads, rounds = shape[name]
            t0 = time.perf_counter()
            data = self.run_child("long_thread_child.py", name, backend, "b_alone",
                                  ["--k-lo", str(k_lo), "--k-hi", str(kmax),
                                   "--threads", str(threads), "--rounds", str(rounds)])
            elapsed = time.perf_counter() - t0
            raw[name] = data
            short, long = data["short"], data["long"]
            row: dict[str, Any] = {
                "k_lo": k_lo, "k_hi": kmax, "threads": threads, "rounds": rounds,
                "pairs": len(long["wall_s"]), "build_s": data["build_s"], "elapsed_s": elapsed,
            }
            for k, side in ((k_lo, short), (kmax, long)):
                row[str(k)] = {
                    "wall_median_ms": statistics.median(side["wall_s"]) * 1e3,
                    "cpu_median_ms": statistics.median(side["cpu_s"]) * 1e3,
                }
            lo, hi = row[str(k_lo)], row[str(kmax)]
            row["ratio_wall"] = hi["wall_median_ms"] / lo["wall_median_ms"]
            row["ratio_cpu"] = hi["cpu_median_ms"] / lo["cpu_median_ms"]
            for what in ("wall", "cpu"):
                pairs = [h / s for h, s in zip(long[f"{what}_s"], short[f"{what}_s"],
                                               strict=True) if s > 0]
                row[f"pair_ratio_{what}"] = statistics.median(pairs) if pairs else float("nan")
            out[name] = row
            tail = (f" (target ≤1.3x: {verdict(row['ratio_wall'] <= 1.3)})"
                    if name == "interlock" else "")
            plural = "s" if rounds > 1 else ""
            log(f"  {name:10s} alone in a new process, {threads}+{threads} threads x {rounds} "
                f"round{plural} = {row['pairs']} pairs, cycle K={kmax} / K={k_lo}: wall "
                f"{row['ratio_wall']:.2f}x (pairs {row['pair_ratio_wall']:.2f}x), CPU time "
                f"{row['ratio_cpu']:.2f}x (pairs {row['pair_ratio_cpu']:.2f}x) "
                f"({lo['wall_median_ms']:.2f} → {hi['wall_median_ms']:.2f} ms wall, "
                f"{lo['cpu_median_ms']:.2f} → {hi['cpu_median_ms']:.2f} ms CPU; "
                f"took {elapsed:.0f} s){tail}")
        self.raw.setdefault("b_alone", {})[backend] = raw
        return out

    # -- (c) ----------------------------------------------------------------------------------

    def fig_c(self, backend: str) -> None:
        if backend == "memory":
            log("\n(c) cold resume — memory: n/a (nothing survives the process)")
            return
        h, reps = self.c_history, self.c_reps
        log(f"\n(c) cold resume of a thread with {h} cycles of history, new process each — "
            f"{backend}: {reps} runs per system")
        # prepare: `reps` threads per system, each with h finished cycles and one more paused
        for name in SYSTEMS:
            s = self.make(name, backend, "c")
            for r in range(reps):
                tid = f"cold-{r}"
                for _ in range(h):
                    cycle(s, tid)
                s.pause(tid)
            s.close()
            del s
            gc.collect()
        per: dict[str, list[dict[str, float]]] = {n: [] for n in SYSTEMS}
        for r in range(reps):
            for name in SYSTEMS if r % 2 == 0 else SYSTEMS[::-1]:
                cmd = [sys.executable, str(HERE / "cold_resume_child.py"), "--system", name,
                       "--backend", backend, "--thread", f"cold-{r}",
                       *self.child_args(name, backend, "c")]
                t0 = time.perf_counter()
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                wall = time.perf_counter() - t0
                if proc.returncode != 0:
                    raise RuntimeError(f"cold resume child failed:\n{proc.stderr}")
                data = json.loads(proc.stdout.strip().splitlines()[-1])
                data["process_s"] = wall
                per[name].append(data)
        out: dict[str, Any] = {}
        for name in SYSTEMS:
            out[name] = {k + "_median": statistics.median(d[k] for d in per[name])
                         for k in ("import_s", "open_s", "resume_s", "process_s")}
        out["ratio_resume"] = (out["langchain"]["resume_s_median"]
                               / out["interlock"]["resume_s_median"])
        out["ratio_process"] = (out["langchain"]["process_s_median"]
                                / out["interlock"]["process_s_median"])
        out["history_cycles"] = h
        self.results.setdefault("c", {})[backend] = out
        self.raw.setdefault("c", {})[backend] = per
        for name in SYSTEMS:
            o = out[name]
            log(f"  {name:10s} resume call {o['resume_s_median'] * 1e3:8.2f} ms   (process "
                f"{o['process_s_median'] * 1e3:7.0f} ms: imports {o['import_s_median'] * 1e3:.0f}"
                f" ms, open store {o['open_s_median'] * 1e3:.1f} ms)")
        log(f"  ratio resume call: {out['ratio_resume']:.1f}x (target ≥10x: "
            f"{verdict(out['ratio_resume'] >= 10)}); whole process: {out['ratio_process']:.1f}x")

    # -- (d) ----------------------------------------------------------------------------------

    def fig_d(self, backend: str) -> None:
        n = self.d_threads
        log(f"\n(d) {n:,} threads paused at once — {backend} (each system in its own process)")
        out: dict[str, Any] = {}
        for name in SYSTEMS:
            out[name] = self.run_child("many_threads_child.py", name, backend, "d",
                                       ["--n", str(n), "--resumes", str(self.d_resumes)])
            o = out[name]
            log(f"  {name:10s} create {o['create_s']:7.2f} s ({o['per_thread_ms']:.2f} ms/thread)"
                f"   bytes {fmt_bytes(o['bytes'])}   peak RSS {o['maxrss_before_kb'] / 1024:.0f}"
                f" → {o['maxrss_after_kb'] / 1024:.0f} MB (+{o['peak_growth_mb']:.1f} MB)   "
                f"resume one at random: median {o['resume_median_ms']:.2f} ms")
        out["ratio_create"] = out["langchain"]["create_s"] / out["interlock"]["create_s"]
        out["ratio_bytes"] = out["langchain"]["bytes"] / out["interlock"]["bytes"]
        out["ratio_resume"] = (out["langchain"]["resume_median_ms"]
                               / out["interlock"]["resume_median_ms"])
        g = out["interlock"]["peak_growth_mb"]
        log(f"  ratios LangChain/interlock: create {out['ratio_create']:.1f}x, bytes "
            f"{out['ratio_bytes']:.1f}x, resume {out['ratio_resume']:.1f}x; interlock peak RSS "
            f"growth {g:.1f} MB (target ≤50 MB: {verdict(g <= 50)})")
        self.results.setdefault("d", {})[backend] = out

    # -- (e) ----------------------------------------------------------------------------------

    def fig_e(self) -> None:
        log(f"\n(e) one cycle, fresh thread each time — memory, four systems: {self.a_cycles} "
            f"cycles per system after {self.a_warmup} warm-up cycles, in rotating blocks of 20")
        systems: dict[str, Any] = {
            "interlock": self.make("interlock", "memory", "e"),
            "langchain": self.make("langchain", "memory", "e"),
            "pydantic-ai": PydanticAISystem(),
            "openai-agents": OpenAIAgentsSystem(),
        }
        for name, s in systems.items():
            for i in range(self.a_warmup):
                cycle(s, f"warm-{i}")
            self.results.setdefault("durability", {}).setdefault("peers", {})[name] = \
                s.describe_durability()
        self.freeze()
        times: dict[str, list[float]] = {s: [] for s in PEERS}
        cpu: dict[str, list[float]] = {s: [] for s in PEERS}
        block = 20
        for start in range(0, self.a_cycles, block):
            shift = (start // block) % len(PEERS)
            for name in PEERS[shift:] + PEERS[:shift]:
                for i in range(start, min(start + block, self.a_cycles)):
                    c0 = time.process_time()
                    p, r = cycle(systems[name], f"e-{i}")
                    cpu[name].append(time.process_time() - c0)
                    times[name].append(p + r)
        self.unfreeze()
        out: dict[str, Any] = {"target": TARGETS["peer_cycle_ratio"]}
        il = statistics.median(times["interlock"])
        il_cpu = statistics.median(cpu["interlock"])
        for name in PEERS:
            med = statistics.median(times[name])
            med_cpu = statistics.median(cpu[name])
            out[name] = {"median_ms": med * 1e3, "p95_ms": percentile(times[name], 95) * 1e3,
                         "ratio_median": med / il, "cpu_median_ms": med_cpu * 1e3,
                         "ratio_cpu": med_cpu / il_cpu}
            if systems[name].counter.count != self.a_warmup + self.a_cycles:
                raise AssertionError(f"{name}: the tool ran {systems[name].counter.count} times")
            systems[name].close()
        self.results["e"] = out
        self.raw["e"] = times
        for name in PEERS:
            o = out[name]
            tail = "" if name == "interlock" else (
                f"   {o['ratio_median']:5.1f}x interlock"
                + (f" (target ≥{out['target']:.0f}x: {verdict(o['ratio_median'] >= out['target'])})"
                   if name in ("pydantic-ai", "openai-agents") else ""))
            log(f"  {name:13s} median {o['median_ms']:7.3f} ms   p95 {o['p95_ms']:7.3f} ms{tail}")
        log("  CPU time of the process per cycle (time.process_time, all its threads; other "
            "processes' load inflates it far less than wall time):")
        for name in PEERS:
            o = out[name]
            log(f"  {name:13s} median {o['cpu_median_ms']:7.3f} ms"
                + ("" if name == "interlock" else f"   {o['ratio_cpu']:5.1f}x interlock"))
        del systems
        gc.collect()

    # -- (sse) and (many): interlock alone, each in processes of its own ---------------------

    def fig_script(self, name: str, script: str, args: list[str]) -> None:
        """Run ``script`` (one of the scale benchmarks) and keep the JSON it writes."""
        out = self.workdir / f"{name}.json"
        log(f"\n({name}) {script} {' '.join(args)}")
        proc = subprocess.run([sys.executable, str(HERE / script), *args, "--out", str(out)],
                              capture_output=True, text=True, check=False)
        for line in proc.stdout.splitlines():
            log(f"  {line}")
        if proc.returncode != 0:
            raise RuntimeError(f"{script} failed:\n{proc.stderr}")
        self.results[name] = json.loads(out.read_text())

    def fig_sse(self) -> None:
        args = ["--decisions", "10", "--idle", "16"] if self.quick else []
        if self.args.smoke:
            args = ["--subscribers", "4", "--decisions", "2", "--client-procs", "1", "--idle",
                    "1", "--idle-base", "1", "--gap", "0.1"]
        self.fig_script("sse", "sse_fanout.py", args)

    def fig_inbox(self, backends: list[str]) -> None:
        stores = [b for b in backends if b in ("sqlite", "postgres")]
        args = ["--sizes", "1000,10000", "--samples", "20", "--browser-samples", "5"] \
            if self.quick else []
        if self.args.smoke:
            args = ["--sizes", "200", "--samples", "3", "--browser-samples", "1"]  # 2 dba threads
        self.fig_script("inbox", "scale_inbox.py", [
            *args, "--backends", ",".join(stores), "--pg-dsn", self.args.pg_dsn])

    def fig_scale(self, backends: list[str]) -> None:
        stores = [b for b in backends if b in ("sqlite", "postgres")]
        args = ["--pending", "10000", "--burst", "2000", "--samples", "20"] if self.quick else []
        if self.args.smoke:
            args = ["--pending", "200", "--burst", "20", "--samples", "5", "--idle", "0.5"]
        self.fig_script("scale", "scale.py", [
            *args, "--backends", ",".join(stores), "--pg-dsn", self.args.pg_dsn])

    def fig_many(self) -> None:
        args = ["--rounds", "1"] if self.quick else ["--rounds", "5", "--fsyncs"]
        if self.args.smoke:
            args = ["--rounds", "1", "--threads", "2", "--cycles", "2"]
        self.fig_script("many", "many_runs.py", args)

    # -- import time --------------------------------------------------------------------------

    def fig_workers(self) -> None:
        _workers_figure(self)

    def fig_cycle(self) -> None:
        _cycle_figure(self)

    def fig_import(self) -> None:
        log(f"\nimport time in a fresh process ({self.import_reps} runs each, median)")
        out: dict[str, Any] = {}
        probe = ("import time; t = time.perf_counter(); import {m}; "
                 "print(time.perf_counter() - t)")
        for label, module in (("interlock", "interlock"), ("langchain", "langchain.agents")):
            walls, inproc = [], []
            for _ in range(self.import_reps):
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, "-c", probe.format(m=module)],
                                      capture_output=True, text=True, check=True)
                walls.append(time.perf_counter() - t0)
                inproc.append(float(proc.stdout.strip()))
            bare = []
            for _ in range(3):
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-c", "pass"], check=True)
                bare.append(time.perf_counter() - t0)
            out[label] = {"import_s": statistics.median(inproc),
                          "import_min_s": min(inproc),
                          "process_s": statistics.median(walls),
                          "bare_interpreter_s": statistics.median(bare)}
            o = out[label]
            log(f"  import {module:18s} {o['import_s']:.3f} s (min {o['import_min_s']:.3f}); "
                f"whole process {o['process_s']:.3f} s (bare interpreter "
                f"{o['bare_interpreter_s']:.3f} s)")
        il = out["interlock"]["import_s"]
        out["ratio"] = out["langchain"]["import_s"] / il
        log(f"  ratio {out['ratio']:.1f}x; target: import interlock < 0.3 s: "
            f"{verdict(il < TARGETS['import_s'])}")
        self.results["import"] = out


def _workers_figure(bench: Bench) -> None:
    """(workers): API + 2 workers against one combined process, on Postgres."""
    import workers

    log("\n(workers) Postgres: 1 combined `interlock serve` vs `serve --api-only` + 2 "
        "`interlock worker`")
    quick = bench.args.quick
    ns = argparse.Namespace(pg_dsn=bench.args.pg_dsn, threads=300 if quick else 1000,
                            clients=50, kill_threads=100 if quick else 200, claim_lease=2.0,
                            rounds=1 if quick else 2, latency_decisions=20 if quick else 50)
    if bench.args.smoke:
        # the kill phase waits until worker 1 is inside its 5th call: enough approvals for that
        ns.threads, ns.clients, ns.kill_threads, ns.rounds = 20, 4, 100, 1
        ns.latency_decisions = 5
    bench.results["workers"] = workers.run(ns)


def _cycle_figure(bench: Bench) -> None:
    """(cycle): ``cycle_cost.py`` in processes of its own (each system alone, alternating
    blocks, callgrind where valgrind is installed), its table passed through, its result
    kept in this run's JSON too. A smoke run's cycle file goes to the work directory, so that
    it never becomes the newest result docs/benchmarks.md is made from."""
    log("\n(cycle) one approval cycle against its physical floor and the peers "
        "(cycle_cost.py)")
    out = bench.workdir / "cycle" if bench.args.smoke else Path(bench.args.out)
    cmd = [sys.executable, str(HERE / "cycle_cost.py"), "--out", str(out)]
    if bench.args.smoke:
        cmd.append("--smoke")
    elif bench.args.quick:
        cmd.append("--quick")
    written: Path | None = None
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            log("  " + line.rstrip("\n"))
            if line.startswith("written "):
                written = Path(line[len("written "):].strip())
    if proc.returncode != 0 or written is None:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode})")
    result = json.loads(written.read_text())
    bench.results["cycle"] = {
        "file": None if bench.args.smoke else written.name,
        **{k: result[k] for k in ("figures", "targets", "floor", "time", "cold",
                                   "bytes_per_cycle", "instructions") if k in result},
    }


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def versions() -> dict[str, str]:
    out = {}
    for pkg in ("interlock", "langchain", "langchain-core", "langgraph", "langgraph-checkpoint",
                "langgraph-checkpoint-sqlite", "langgraph-checkpoint-postgres",
                "langgraph-prebuilt", "pydantic", "psycopg", "psycopg-pool",
                "pydantic-ai-slim", "openai-agents"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    out["sqlite"] = sqlite3.sqlite_version
    return out


def compile_interlock() -> str:
    """Write the bytecode caches of interlock's modules, as ``pip install`` does for an
    installed package (and did for LangChain's here). A source checkout that has never been
    imported with bytecode writing on (e.g. ``PYTHONDONTWRITEBYTECODE=1``) would otherwise be
    compiled again by every new process, which the import and cold-start figures would count
    against interlock alone."""
    import compileall

    import interlock

    where = Path(interlock.__file__).parent
    ok = compileall.compile_dir(str(where), quiet=1)
    return f"{where}: {'up to date' if ok else 'some files could not be compiled'}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="memory,sqlite,postgres",
                   help="comma-separated subset of memory,sqlite,postgres")
    p.add_argument("--figures",
                   default="cycle,a,b,c,d,e,import,workers,sse,many,inbox,scale",
                   help="comma-separated subset of cycle,a,b,c,d,e,import,workers,sse,many,"
                   "inbox,scale (cycle runs once, in processes of its own: about 15 minutes; "
                   "e runs once, in memory; workers once, on Postgres; sse and many once, on "
                   "SQLite; inbox and scale on SQLite and Postgres)")
    p.add_argument("--quick", action="store_true",
                   help="fewer cycles, K up to 50, 1,000 threads for (d): a few minutes")
    p.add_argument("--smoke", action="store_true",
                   help="a few cycles of every figure (with --quick too): checks that the "
                   "benchmark runs, in about a minute; its numbers mean nothing and go to "
                   "latest-smoke.json")
    p.add_argument("--threads", type=int, default=None, help="threads for (d)")
    p.add_argument("--gc-freeze", action="store_true",
                   help="for (a) and (b), move the objects that exist after imports and "
                   "warm-up to the permanent GC generation (a sensitivity check: by default the "
                   "collector runs as in any application)")
    p.add_argument("--async-tool", action="store_true",
                   help="for (a) and (b), give interlock the tool as an async function, which "
                   "runs on the event loop instead of a worker thread (a sensitivity check: "
                   "by default both sides get a plain function, and interlock runs sync tools "
                   "in a worker thread)")
    p.add_argument("--pg-dsn", default=DEFAULT_DSN)
    p.add_argument("--workdir", default=None, help="where the SQLite files go (default: a "
                   "temporary directory, removed at the end together with the Postgres "
                   "schemas bench_lg_* / bench_il_*)")
    p.add_argument("--out", default=str(HERE / "results"))
    args = p.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    figures = [f.strip() for f in args.figures.split(",") if f.strip()]
    bench = Bench(args)
    if "postgres" in backends:
        problem = pg_util.available(args.pg_dsn)
        if problem is not None:
            log(f"Postgres not reachable at {args.pg_dsn} ({problem}); skipping postgres.")
            backends.remove("postgres")
        else:
            try:
                import interlock.storage.postgres  # noqa: F401
            except ImportError as exc:
                log(f"interlock has no Postgres backend here ({exc}); skipping postgres.")
                backends.remove("postgres")

    started = time.time()
    compiled = compile_interlock()
    info = machine_info()
    bench.results.update({
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": args.quick,
        "smoke": args.smoke,
        "gc_freeze": args.gc_freeze,
        "async_tool": args.async_tool,
        "machine": info,
        "versions": versions(),
        "backends": backends,
        "settings": {
            "a_cycles": bench.a_cycles, "a_warmup": bench.a_warmup, "b_kmax": bench.b_kmax,
            "c_history": bench.c_history, "c_reps": bench.c_reps,
            "d_threads": bench.d_threads, "d_resumes": bench.d_resumes,
        },
        "sqlite_saver_default": sqlite_default_synchronous(),
    })
    if "postgres" in backends:
        bench.results["postgres_server"] = pg_util.server_info(args.pg_dsn)
    v = bench.results["versions"]
    log(f"machine: {info['cpu']}, {info['cores']} cores, {info['ram_gib']} GiB RAM, Python "
        f"{info['python']}, load average {tuple(round(x, 2) for x in info['loadavg'])}")
    log(f"interlock {v['interlock']}; langchain {v['langchain']}, langchain-core "
        f"{v['langchain-core']}, langgraph {v['langgraph']}, langgraph-checkpoint-sqlite "
        f"{v['langgraph-checkpoint-sqlite']}, langgraph-checkpoint-postgres "
        f"{v['langgraph-checkpoint-postgres']}; SQLite {v['sqlite']}")
    log(f"bytecode: interlock's modules compiled as an installed package's are "
        f"({compiled}; LangChain's were compiled by pip when it was installed)")
    log("durability, same on both sides:")
    log("  SQLite: journal_mode=WAL, synchronous=FULL (fsync at every commit) on both; "
        f"SqliteSaver by itself sets only WAL and runs with SQLite's default "
        f"({bench.results['sqlite_saver_default']})")
    if "postgres" in backends:
        sc = bench.results["postgres_server"]["synchronous_commit"]
        log(f"  Postgres: synchronous_commit={sc} (server setting; LangGraph's connection reports "
            f"it, interlock's pool does not change it)")
    log("  LangGraph: every invoke with durability='sync' (its default is 'async')")
    log("garbage collector: " + ("frozen after imports and warm-up for (a) and (b)"
                                 if args.gc_freeze else "on, as in any application"))
    log("tool: " + ("interlock's is an async function for (a) and (b) (no worker thread); "
                    "LangChain's a plain function" if args.async_tool
                    else "a plain function on both sides (interlock runs it in a worker thread)"))
    log(f"backends: {', '.join(backends)}; figures: {', '.join(figures)}"
        + ("; QUICK run" if args.quick else "") + ("; SMOKE run" if args.smoke else ""))

    try:
        if "cycle" in figures:
            bench.fig_cycle()
        for backend in backends:
            if "a" in figures:
                bench.fig_a(backend)
            if "b" in figures:
                bench.fig_b(backend)
            if "c" in figures:
                bench.fig_c(backend)
            if "d" in figures:
                bench.fig_d(backend)
        if "e" in figures:
            bench.fig_e()
        if "import" in figures:
            bench.fig_import()
        if "workers" in figures and "postgres" in backends:
            bench.fig_workers()
        if "sse" in figures:
            bench.fig_sse()
        if "many" in figures:
            bench.fig_many()
        if "inbox" in figures:
            bench.fig_inbox(backends)
        if "scale" in figures:
            bench.fig_scale(backends)
    finally:
        if args.workdir is None:  # with --workdir, the files and schemas stay for inspection
            shutil.rmtree(bench.workdir, ignore_errors=True)
            if "postgres" in backends:
                for system in ("lg", "il"):
                    for tag in ("a", "b", "b_alone", "c", "d", "e"):
                        pg_util.drop_schema(args.pg_dsn, f"bench_{system}_{tag}")
    bench.results["elapsed_s"] = time.time() - started
    bench.results["loadavg_end"] = os.getloadavg()
    out = Path(args.out)
    (out / "raw").mkdir(parents=True, exist_ok=True)
    name = "latest-smoke.json" if args.smoke else \
        "latest-quick.json" if args.quick else "latest.json"
    (out / name).write_text(json.dumps(bench.results, indent=1, sort_keys=True) + "\n")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    (out / "raw" / f"{stamp}.json").write_text(
        json.dumps({"summary": bench.results, "raw": bench.raw}) + "\n")
    log(f"\nresults: {out / name} (raw data: {out / 'raw' / (stamp + '.json')}); "
        f"took {bench.results['elapsed_s'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The cost of one approval cycle, against its physical floor and against the peers, in one run.

    .venv-bench/bin/python bench/cycle_cost.py [--quick] [--no-callgrind] [--out DIR]

A cycle is the benchmark's scenario (``scenario.py``): a user message, the model proposes
``write_file``, the run pauses, a reviewer approves, the tool runs once, the model answers.
Every figure is measured in this run, each system alone in a new process:

* **instructions per cycle** (valgrind's callgrind, ``PYTHONHASHSEED=0``): two processes per
  system, ``warm`` cycles then 0 and ``warm`` cycles then ``cycles`` more; the difference
  divided by ``cycles`` is one cycle's count, start-up and warm-up cancel out. Repeatable to a
  fraction of a percent on a loaded machine: the primary figure;
* **CPU and wall time per cycle**: blocks of cycles in alternating processes (interlock,
  floor, peers, interlock, ...), the median of the blocks' per-cycle means;
* **the SQLite commit floor**: a bare ``sqlite3`` loop that makes, per cycle, the same number
  of durable commits as an interlock SQLite cycle (transactions that wrote, counted on its
  connections), each inserting as many bytes as interlock stores per commit, and the same
  number of read-only transactions (each reading one row), with the store's own pragmas (WAL,
  ``synchronous=FULL``, ...). Its wall time is what the disk and SQLite need at least;
* **the cold resume's floor**: a new process that opens a SQLite database with the same
  pragmas and makes the resume's commits and reads, against a new process that builds the agent
  and resumes a paused 50-cycle thread; both count from after the imports. The resume's
  transactions are counted in another process, on a copy, so the timed one runs without the
  counter;
* **bytes per cycle** at 50 cycles (memory and SQLite stores, every feature on);
* **a profile of the memory cycle by function** (cProfile after the warm-up): calls per cycle,
  and each function's share of the time, with and without what it calls;
* the peers (LangChain with ``InMemorySaver``, Pydantic AI, the OpenAI Agents SDK), in memory
  with their persistence counted (``peers.py``).

The result is one JSON file in ``--out`` (``cycle-YYYY-MM-DD-HHMM.json``) and a table on
stdout with each target of the cycle's cost and whether this run meets it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PROFILE_ROWS = {"inclusive": 12, "self": 10}
"""Rows of each table of the cycle's profile."""

SYSTEMS = ("il-memory", "il-sqlite", "floor-sqlite", "lc-memory", "pydantic-ai",
           "openai-agents")
PEERS = {"lc-memory": "LangChain", "pydantic-ai": "Pydantic AI",
         "openai-agents": "OpenAI Agents SDK"}

TARGETS = {
    # name: (what, limit, goal, higher_is_better)
    "memory_instructions": ("memory cycle, instructions", 3.7e6, 3.0e6, False),
    "sqlite_vs_floor": ("SQLite cycle / its commit floor (wall time, alternating)", 2.5, 2.0,
                        False),
    "cold_vs_floor": ("cold resume call / its floor", 1.5, None, False),
    "bytes_per_cycle": ("bytes per cycle at 50 cycles (SQLite)", 7000.0, None, False),
    "lc-memory": ("LangChain / interlock, CPU per cycle (memory)", 5.0, 6.0, True),
    "pydantic-ai": ("Pydantic AI / interlock, CPU per cycle (memory)", 8.0, 10.0, True),
    "openai-agents": ("OpenAI Agents SDK / interlock, CPU per cycle (memory)", 8.0, 10.0,
                      True),
}


# --------------------------------------------------------------------------- the children

_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


class CommitCounter:
    """Counts the transactions on every SQLite connection opened after ``install``: a
    ``commits`` is one that wrote (an insert, update or delete before its ``COMMIT``, or a
    write outside any transaction), made durable with an fsync in WAL with
    ``synchronous=FULL``; a ``reads`` is a read-only transaction (``BEGIN``, selects,
    ``COMMIT``), which writes nothing and syncs nothing."""

    def __init__(self) -> None:
        self.commits = 0
        self.reads = 0
        self._connect = sqlite3.connect

    def install(self) -> None:
        counter = self

        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = counter._connect(*args, **kwargs)
            conn.set_trace_callback(counter._tracer())
            return conn

        sqlite3.connect = connect  # type: ignore[assignment]

    def _tracer(self) -> Callable[[str], None]:
        """The trace callback of one connection (its transaction state is its own)."""
        state = {"open": False, "wrote": False}

        def seen(statement: str) -> None:
            words = statement.split(None, 2)
            word = words[0].upper() if words else ""
            if word == "BEGIN":
                state.update(open=True, wrote=False)
            elif word in ("COMMIT", "END"):
                if state["wrote"]:
                    self.commits += 1
                elif state["open"]:
                    self.reads += 1
                state.update(open=False, wrote=False)
            elif word == "ROLLBACK" and (len(words) < 2 or words[1].upper() != "TO"):
                state.update(open=False, wrote=False)  # ROLLBACK TO a savepoint goes on
            elif word in _WRITES:
                if state["open"]:
                    state["wrote"] = True
                else:
                    self.commits += 1  # autocommit: a transaction of its own

        return seen


def floor_loop(path: str, commits: int, size: int, pragmas: dict[str, str],
               reads: int = 0) -> Callable[[str], None]:
    """One floor "cycle": ``commits`` durable commits, each inserting ``size`` bytes, and
    ``reads`` read-only transactions, each reading one of those rows back."""
    conn = sqlite3.connect(path, isolation_level=None)
    for name, value in pragmas.items():
        conn.execute(f"PRAGMA {name}={value}")
    # one transaction: the cold floor, which times its opening, pays one durable write for it
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, k TEXT, v BLOB)")
    conn.execute("CREATE INDEX IF NOT EXISTS t_k ON t (k)")
    conn.execute("COMMIT")
    payload = os.urandom(max(1, size))

    def cycle(thread_id: str) -> None:
        for i in range(commits):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t (k, v) VALUES (?, ?)", (f"{thread_id}/{i}", payload))
            conn.execute("COMMIT")
        for i in range(reads):
            conn.execute("BEGIN")
            conn.execute("SELECT v FROM t WHERE k=?", (f"{thread_id}/{i % max(1, commits)}",)
                         ).fetchall()
            conn.execute("COMMIT")

    return cycle


def make_system(name: str, workdir: str, floor: dict[str, Any] | None) -> Any:
    if name == "il-memory":
        from il_side import InterlockSystem

        return InterlockSystem("memory")
    if name == "il-sqlite":
        from il_side import InterlockSystem

        s = InterlockSystem("sqlite", sqlite_path=str(Path(workdir) / "il.db"))
        s.open()
        return s
    if name == "lc-memory":
        from lc_side import LangChainSystem

        return LangChainSystem("memory")
    if name == "pydantic-ai":
        from peers import PydanticAISystem

        return PydanticAISystem()
    if name == "openai-agents":
        from peers import OpenAIAgentsSystem

        return OpenAIAgentsSystem()
    raise ValueError(name)


def child(a: argparse.Namespace) -> None:
    """Run ``warm`` + ``cycles`` cycles of one system and print one JSON line."""
    workdir = a.workdir
    floor = json.loads(a.floor) if a.floor else None
    counter = CommitCounter()
    if a.count_commits:
        counter.install()
    if a.system == "floor-sqlite":
        assert floor is not None
        one = floor_loop(str(Path(workdir) / "floor.db"), floor["commits"], floor["size"],
                         floor["pragmas"], floor.get("reads", 0))

        def run_cycle(tid: str) -> None:
            one(tid)

        system = None
    else:
        system = make_system(a.system, workdir, floor)

        def run_cycle(tid: str) -> None:
            system.pause(tid)
            system.resume(tid)

    for i in range(a.warm):
        run_cycle(f"w{i}")
    commits0, reads0 = counter.commits, counter.reads
    bytes0 = system.stored_bytes() if system is not None else 0
    c0, w0 = time.process_time(), time.perf_counter()
    for i in range(a.cycles):
        run_cycle(f"c{i}")
    c1, w1 = time.process_time(), time.perf_counter()
    out: dict[str, Any] = {"system": a.system, "cycles": a.cycles,
                           "cpu_ms": (c1 - c0) * 1e3 / max(1, a.cycles),
                           "wall_ms": (w1 - w0) * 1e3 / max(1, a.cycles)}
    if a.count_commits:
        out["commits_per_cycle"] = (counter.commits - commits0) / max(1, a.cycles)
        out["reads_per_cycle"] = (counter.reads - reads0) / max(1, a.cycles)
    if system is not None:
        out["bytes_per_cycle"] = (system.stored_bytes() - bytes0) / max(1, a.cycles)
        if a.system == "il-sqlite":
            conn = sqlite3.connect(system.checkpointer.path)
            out["pragmas"] = {
                "journal_mode": conn.execute("PRAGMA journal_mode").fetchone()[0],
                "synchronous": str(system.checkpointer.synchronous),
                "temp_store": "MEMORY",
            }
            conn.close()
        system.close()
    print("RESULT " + json.dumps(out), flush=True)


def cold_floor_child(a: argparse.Namespace) -> None:
    """A new process's floor for the cold resume: open the database, make the commits."""
    floor = json.loads(a.floor)
    t0 = time.perf_counter()
    floor_loop(floor["path"], floor["commits"], floor["size"], floor["pragmas"],
               floor.get("reads", 0))("cold")
    t1 = time.perf_counter()
    print("RESULT " + json.dumps({"floor_s": t1 - t0}), flush=True)


_METHOD = re.compile(r"<method '(?P<m>\w+)' of '(?:[\w.]*\.)?(?P<c>\w+)' objects>")
_BUILTIN = re.compile(r"<built-in method (?:[\w.]*\.)?(\w+)>")


def _label(file: str, line: int, name: str) -> tuple[str, str]:
    """A profile entry as (where, function): where is interlock, a library or Python itself."""
    if file == "~":  # a built-in: a C function or method
        if m := _METHOD.match(name):
            return ("C", f"{m['c']}.{m['m']}")
        if m := _BUILTIN.match(name):
            return ("C", m.group(1))
        return ("C", name.strip("<>"))
    path = Path(file)
    parts = path.parts
    if "interlock" in parts and "site-packages" not in parts:
        rel = "/".join(parts[len(parts) - 1 - parts[::-1].index("interlock"):])
        return ("interlock", f"{rel}:{name}")
    if "site-packages" in parts:
        rel = "/".join(parts[parts.index("site-packages") + 1:])
        return ("library", f"{rel}:{name}")
    if len(parts) > 1 and not parts[-2].startswith("python"):
        return ("Python", f"{parts[-2]}/{parts[-1]}:{name}")
    return ("Python", f"{path.name}:{name}")


def profile_child(a: argparse.Namespace) -> None:
    """A profile of the interlock memory cycle, by function: ``warm`` cycles, then
    ``cycles`` under cProfile. Calls per cycle are exact; the shares are of the time on the
    run's thread under the profiler (wall time, so the wait for the sync tool's thread shows as
    a lock's ``acquire``), which inflates code that makes many small calls."""
    import cProfile
    import pstats

    system = make_system("il-memory", a.workdir, None)
    for i in range(a.warm):
        system.pause(f"w{i}")
        system.resume(f"w{i}")
    prof = cProfile.Profile()
    prof.enable()
    for i in range(a.cycles):
        system.pause(f"c{i}")
        system.resume(f"c{i}")
    prof.disable()
    system.close()
    stats = pstats.Stats(prof)
    total = stats.total_tt  # type: ignore[attr-defined]
    n = max(1, a.cycles)
    entries = stats.stats  # type: ignore[attr-defined]
    # a function that spends 90 % of its time in one callee only passes the call on
    passes_on = {caller for callee, (*_, callers) in entries.items()
                 for caller, (_c, _n, _t, ct) in callers.items()
                 if caller != callee and ct >= 0.9 * entries[caller][3]}
    rows = []
    for key, (_cc, nc, tt, ct, _callers) in entries.items():
        where, fn = _label(*key)
        rows.append({"where": where, "function": fn, "calls": nc / n, "self": tt / total,
                     "inclusive": ct / total, "step": key not in passes_on})
    engine = [r for r in rows if r["where"] == "interlock" and r["step"]
              and 0.02 <= r["inclusive"] <= 0.9]
    calls = stats.total_calls  # type: ignore[attr-defined]
    out = {"cycles": a.cycles, "calls_per_cycle": calls / n, "ms_per_cycle": total * 1e3 / n,
           "inclusive": sorted(engine, key=lambda r: -r["inclusive"])[:PROFILE_ROWS["inclusive"]],
           "self": sorted(rows, key=lambda r: -r["self"])[:PROFILE_ROWS["self"]]}
    print("RESULT " + json.dumps(out), flush=True)


# --------------------------------------------------------------------------- the parent

def run_child(args: list[str], *, valgrind: Path | None = None,
              env: dict[str, str] | None = None) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    if valgrind is not None:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={valgrind}", *cmd]
    e = dict(os.environ, PYTHONHASHSEED="0", **(env or {}))
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]))
    raise RuntimeError(f"no result from {' '.join(cmd)}:\n{p.stdout[-2000:]}")


def callgrind_total(path: Path) -> int:
    for line in path.read_text().splitlines():
        m = re.match(r"(?:summary|totals):\s+(\d+)", line)
        if m:
            return int(m.group(1))
    raise RuntimeError(f"no totals in {path}")


def instructions(system: str, workdir: str, floor: dict[str, Any] | None, warm: int,
                 cycles: int) -> float:
    counts = []
    for n in (0, cycles):
        wd = tempfile.mkdtemp(dir=workdir)
        out = Path(wd) / "callgrind.out"
        run_child(["--child", system, "--warm", str(warm), "--cycles", str(n),
                   "--workdir", wd, *(["--floor", json.dumps(floor)] if floor else [])],
                  valgrind=out)
        counts.append(callgrind_total(out))
        shutil.rmtree(wd, ignore_errors=True)
    return (counts[1] - counts[0]) / cycles


def timed_blocks(systems: list[str], workdir: str, floor: dict[str, Any], warm: int,
                 cycles: int, blocks: int) -> dict[str, dict[str, Any]]:
    per: dict[str, list[dict[str, Any]]] = {s: [] for s in systems}
    for b in range(blocks):
        order = systems if b % 2 == 0 else list(reversed(systems))
        for s in order:
            wd = tempfile.mkdtemp(dir=workdir)
            per[s].append(run_child(["--child", s, "--warm", str(warm), "--cycles", str(cycles),
                                     "--workdir", wd, "--floor", json.dumps(floor)]))
            shutil.rmtree(wd, ignore_errors=True)
    out: dict[str, dict[str, Any]] = {}
    for s, rows in per.items():
        out[s] = {"cpu_ms": statistics.median(r["cpu_ms"] for r in rows),
                  "wall_ms": statistics.median(r["wall_ms"] for r in rows),
                  "blocks": [{"cpu_ms": r["cpu_ms"], "wall_ms": r["wall_ms"]} for r in rows]}
    return out


def cold_resume(workdir: str, floor: dict[str, Any], rounds: int) -> dict[str, Any]:
    """Alternating new processes: interlock resuming a paused 50-cycle thread, and the floor."""
    from il_side import InterlockSystem

    resume_s: list[float] = []
    floor_s: list[float] = []
    commits: list[float] = []
    reads: list[float] = []
    for _ in range(rounds):
        wd = tempfile.mkdtemp(dir=workdir)
        path = str(Path(wd) / "cold.db")
        s = InterlockSystem("sqlite", sqlite_path=path)
        s.open()
        for _ in range(49):
            s.pause("cold")
            s.resume("cold")
        s.pause("cold")
        s.close()
        # the transactions are counted on a copy, by a process that is not timed: the
        # counter's trace callback runs at every statement, which the floor does not pay
        copy = str(Path(wd) / "count.db")
        shutil.copyfile(path, copy)
        counted = run_child(["--cold-interlock", copy, "--count-commits"])
        commits.append(counted["commits"])
        reads.append(counted["reads"])
        res = run_child(["--cold-interlock", path])
        resume_s.append(res["open_s"] + res["resume_s"])
        f = dict(floor, commits=round(counted["commits"]), reads=round(counted["reads"]),
                 path=str(Path(wd) / "floor.db"))
        floor_s.append(run_child(["--cold-floor", "--floor", json.dumps(f)])["floor_s"])
        shutil.rmtree(wd, ignore_errors=True)
    return {"call_ms": statistics.median(resume_s) * 1e3,
            "floor_ms": statistics.median(floor_s) * 1e3,
            "commits": statistics.median(commits),
            "reads": statistics.median(reads),
            "rounds": rounds}


def cold_interlock_child(path: str, count: bool) -> None:
    counter = CommitCounter()
    if count:
        counter.install()
    from il_side import InterlockSystem

    t0 = time.perf_counter()
    s = InterlockSystem("sqlite", sqlite_path=path)
    s.open()
    t1 = time.perf_counter()
    s.resume("cold")
    t2 = time.perf_counter()
    commits, reads = counter.commits, counter.reads
    s.close()
    print("RESULT " + json.dumps({"open_s": t1 - t0, "resume_s": t2 - t1,
                                  "commits": commits, "reads": reads}), flush=True)


def bytes_at_50(workdir: str) -> dict[str, float]:
    from il_side import InterlockSystem

    out = {}
    for backend in ("memory", "sqlite"):
        s = InterlockSystem(backend, sqlite_path=str(Path(workdir) / f"bytes-{backend}.db"))
        for _ in range(50):
            s.pause("grow")
            s.resume("grow")
        out[backend] = s.stored_bytes() / 50
        s.close()
    return out


def floor_of(probe: dict[str, Any]) -> dict[str, Any]:
    """The floor of what a probe of the interlock SQLite cycle counted: as many durable
    commits, each of the bytes stored per commit, and as many read-only transactions."""
    commits = max(1, round(probe["commits_per_cycle"]))
    return {"commits": commits, "size": int(probe["bytes_per_cycle"] / commits),
            "reads": round(probe["reads_per_cycle"]), "pragmas": probe["pragmas"]}


def verdict(value: float, limit: float, higher: bool) -> str:
    ok = value >= limit if higher else value <= limit
    return "met" if ok else "MISSED"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer blocks and cycles (a smoke run)")
    p.add_argument("--smoke", action="store_true",
                   help="a few cycles of each: checks that the benchmark runs, not its numbers")
    p.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    p.add_argument("--out", default=str(HERE / "results"))
    p.add_argument("--instructions", metavar="SYSTEM[,SYSTEM]", default=None,
                   help="only count instructions per cycle of these systems (e.g. il-memory) "
                        "and print them; nothing is written")
    p.add_argument("--child", choices=SYSTEMS, dest="system", help=argparse.SUPPRESS)
    p.add_argument("--warm", type=int, default=30, help=argparse.SUPPRESS)
    p.add_argument("--cycles", type=int, default=100, help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--floor", help=argparse.SUPPRESS)
    p.add_argument("--count-commits", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--cold-interlock", help=argparse.SUPPRESS)
    p.add_argument("--cold-floor", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--profile-child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.system:
        child(a)
        return 0
    if a.cold_interlock:
        cold_interlock_child(a.cold_interlock, a.count_commits)
        return 0
    if a.cold_floor:
        cold_floor_child(a)
        return 0
    if a.profile_child:
        profile_child(a)
        return 0

    if a.instructions:
        with tempfile.TemporaryDirectory() as workdir:
            probe = run_child(["--child", "il-sqlite", "--warm", "5", "--cycles", "5",
                               "--workdir", workdir, "--count-commits"])
            floor = floor_of(probe)
            for s in a.instructions.split(","):
                n = instructions(s, workdir, floor, a.warm, a.cycles)
                print(f"{s:14} {n / 1e6:8.3f}M instructions per cycle", flush=True)
        return 0

    from scenario import machine_info

    warm, cycles, blocks, rounds = ((2, 3, 1, 1) if a.smoke else (10, 20, 3, 3) if a.quick
                                    else (30, 100, 7, 9))
    started = time.time()
    result: dict[str, Any] = {"machine": machine_info(), "started": time.strftime(
        "%Y-%m-%d %H:%M:%S", time.gmtime(started)), "quick": a.quick or a.smoke}
    with tempfile.TemporaryDirectory() as workdir:
        # 1. what an interlock SQLite cycle commits, to build its floor
        probe = run_child(["--child", "il-sqlite", "--warm", str(warm), "--cycles",
                           str(cycles), "--workdir", workdir, "--count-commits"])
        floor = floor_of(probe)
        result["floor"] = floor
        print(f"an interlock SQLite cycle: {probe['commits_per_cycle']:.2f} durable commits, "
              f"{probe['reads_per_cycle']:.2f} read-only transactions, "
              f"{probe['bytes_per_cycle']:.0f} bytes stored; floor: {floor['commits']} commits "
              f"of {floor['size']} bytes and {floor['reads']} reads, {floor['pragmas']}",
              flush=True)
        # 2. time per cycle, alternating processes
        times = timed_blocks(list(SYSTEMS), workdir, floor, warm, cycles, blocks)
        result["time"] = times
        # 3. instructions per cycle
        if not a.no_callgrind and shutil.which("valgrind"):
            ins = {}
            for s in SYSTEMS:
                ins[s] = instructions(s, workdir, floor, warm, cycles)
                print(f"{s:14} {ins[s] / 1e6:8.2f}M instructions per cycle", flush=True)
            result["instructions"] = ins
        # 4. cold resume against its floor
        result["cold"] = cold_resume(workdir, floor, rounds)
        # 5. bytes per cycle
        result["bytes_per_cycle"] = bytes_at_50(workdir)
        # 6. where a memory cycle's time goes, by function
        result["profile"] = run_child(["--profile-child", "--warm", str(warm), "--cycles",
                                       str(max(cycles, 20)), "--workdir", workdir])
    result["elapsed_s"] = time.time() - started
    result["commit"] = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
                                      capture_output=True, text=True, check=False).stdout.strip()

    il = times["il-memory"]["cpu_ms"]
    figures: dict[str, float] = {
        # both in wall time, measured in alternating processes on the same disk: a loaded
        # machine slows both (CPU against the floor's wall time would flatter a loaded run)
        "sqlite_vs_floor": times["il-sqlite"]["wall_ms"] / times["floor-sqlite"]["wall_ms"],
        "cold_vs_floor": result["cold"]["call_ms"] / result["cold"]["floor_ms"],
        "bytes_per_cycle": result["bytes_per_cycle"]["sqlite"],
        **{p: times[p]["cpu_ms"] / il for p in PEERS},
    }
    if "instructions" in result:
        figures["memory_instructions"] = result["instructions"]["il-memory"]
    result["figures"] = figures
    result["targets"] = {k: {"what": TARGETS[k][0], "value": v, "limit": TARGETS[k][1],
                             "goal": TARGETS[k][2],
                             "met": verdict(v, TARGETS[k][1], TARGETS[k][3]) == "met"}
                         for k, v in figures.items()}

    print()
    print(f"{'system':16}{'CPU ms':>9}{'wall ms':>9}{'instr.':>10}")
    for s in SYSTEMS:
        n = result.get("instructions", {}).get(s)
        print(f"{s:16}{times[s]['cpu_ms']:9.3f}{times[s]['wall_ms']:9.3f}"
              f"{(f'{n / 1e6:9.2f}M' if n else '        -'):>10}")
    c = result["cold"]
    print(f"cold resume call {c['call_ms']:.2f} ms against its floor {c['floor_ms']:.2f} ms "
          f"({c['commits']:.0f} commits, {c['reads']:.0f} reads)")
    pr = result["profile"]
    print(f"\na memory cycle under cProfile: {pr['calls_per_cycle']:.0f} function calls, "
          f"{pr['ms_per_cycle']:.2f} ms; by inclusive share (interlock's functions):")
    for r in pr["inclusive"]:
        print(f"  {r['inclusive']:6.1%} {r['calls']:6.1f} calls  {r['function']}")
    print("by own share (every function):")
    for r in pr["self"]:
        print(f"  {r['self']:6.1%} {r['calls']:6.1f} calls  {r['function']}")
    print()
    for t in result["targets"].values():
        print(f"{t['what']:58} {t['value']:12.3f}  target {t['limit']:g}: "
              f"{'met' if t['met'] else 'MISSED'}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    name = out / f"cycle-{time.strftime('%Y-%m-%d-%H%M', time.gmtime(started))}.json"
    name.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwritten {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""API + worker tiers on Postgres against one combined process. Not a test; not run by CI.

    .venv-bench/bin/python bench/workers.py [--threads 1000] [--clients 50] [--kill-threads 200]

(also ``bench/run.py --figures workers``). With the agent of ``workers_agent.py`` (one gated
tool whose side effect is a line in a file), on a fresh Postgres schema:

* **throughput**: ``--threads`` threads paused for review; ``--clients`` concurrent HTTP
  clients post one approval each through ``POST /api/threads/{id}/decisions``, against (1) one
  ``interlock serve`` process that stores and runs, (2) ``interlock serve --api-only`` with one
  ``interlock worker`` process and (3) with two. Reported: decisions accepted per second (all
  202s), runs finished per second (every thread ``completed``, read from the database), runs
  finished per CPU-second of all the tier's processes together (per core), the time from a
  decision's POST to its tool's start (p50 / p95, from the side-effect file's clock), and the
  executions counted in the side-effect file: every approval's tool must have started and
  finished exactly once, none in the API-only process.
* **a worker killed mid-tool** (API-only + 2 workers): ``--kill-threads`` approvals of a tool
  that takes 0.2 s; once the first worker is inside a tool, it gets SIGKILL. Reported: how
  many runs completed, how many calls the killed worker was running (each must become an
  "outcome unknown" request, the documented rule for a call whose process died while it ran;
  so does a call whose ``running`` was stored just before the kill, before its tool started),
  calls started twice (must be 0), threads left unsettled (must be 0), and how long until the
  surviving worker had settled everything. The outcome-unknown requests are then answered
  (``respond``) and no tool may start again.
* **inbox latency across processes**: two API-only servers and a worker, each polling only
  every 30 s; decisions posted one by one to server A; the time until server B's inbox stream
  shows the request resolved, and the thread completed (LISTEN/NOTIFY, not polling).

Prints a table; writes ``bench/results/workers-YYYY-MM-DD-HHMM.json``, whose figures
``bench/page.py`` puts on docs/benchmarks.md (the newest such file).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import httpx  # noqa: E402
import pg_util  # noqa: E402
from scenario import machine_info  # noqa: E402

DEFAULT_DSN = os.environ.get("INTERLOCK_BENCH_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
SCHEMA = f"bench_workers_{os.getpid()}"
"""One schema per run: runs on the same Postgres server at the same time stay apart."""
READY = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")


def log(msg: str = "") -> None:
    print(msg, flush=True)


class Proc:
    """An ``interlock`` process (serve or worker) of the benchmark agent."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], ready: str) -> None:
        self.name = name
        self.proc = subprocess.Popen([sys.executable, "-m", "interlock.cli", *args], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.port: int | None = None
        deadline = time.monotonic() + 60
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            m = READY.search(line)
            if m:
                self.port = int(m.group(1))
            if ready in line:
                break
        else:
            raise RuntimeError(f"{name} did not start:\n{''.join(self.lines)}")
        import threading

        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu(self) -> float:
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def env_for(exec_log: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(HERE), "INTERLOCK_BENCH_EXEC_LOG": str(exec_log)}


def serve(url: str, exec_log: Path, *extra: str) -> Proc:
    return Proc("api" if "--api-only" in extra else "combined",
                ["serve", "workers_agent:agent", "--db", url, "--port", "0",
                 "--log-level", "info", "--no-dispatch", *extra],
                env_for(exec_log), "Uvicorn running on")


def worker(url: str, exec_log: Path, name: str, *extra: str) -> Proc:
    return Proc(name, ["worker", "workers_agent:agent", "--db", url, "--log-level", "warning",
                       *extra], env_for(exec_log), "interlock: worker for")


async def prefill(url: str, word: str, n: int) -> dict[str, str]:
    """``n`` threads paused for review; thread id -> pending interrupt id."""
    from workers_agent import agent

    from interlock.storage import from_url

    agent.checkpointer = from_url(url)
    sem = asyncio.Semaphore(16)
    out: dict[str, str] = {}

    async def one(i: int) -> None:
        tid = f"{word}{i:05d}"
        async with sem:
            r = await agent.ainvoke(f"{word} {tid}", thread_id=tid)
        out[tid] = r.interrupts[0].id

    await asyncio.gather(*(one(i) for i in range(n)))
    await agent.aclose()
    return out


def db_count(dsn: str, status: str) -> int:
    with pg_util.connect(dsn) as conn:
        row = conn.execute(f'SELECT count(*) FROM "{SCHEMA}".interlock_threads '
                           "WHERE status = %s", [status]).fetchone()
    return int(row[0])


def executions(exec_log: Path) -> list[tuple[str, str, int]]:
    """The side-effect file's lines: (``S`` or ``F``, call key, process id)."""
    return [(kind, key, int(pid)) for kind, key, pid, _ in _lines(exec_log)]


def started_at(exec_log: Path) -> dict[str, float]:
    """Call key -> the wall-clock time its tool first started."""
    out: dict[str, float] = {}
    for kind, key, _, at in _lines(exec_log):
        if kind == "S":
            out.setdefault(key, float(at))
    return out


def _lines(exec_log: Path) -> list[list[str]]:
    return [line.split() for line in exec_log.read_text().splitlines()]


async def post_decisions(base: str, pending: dict[str, str], clients: int,
                         decision: dict[str, Any] | None = None,
                         sent: dict[str, float] | None = None) -> tuple[float, Counter[int]]:
    """Every pending request decided through the API by ``clients`` concurrent clients;
    returns the seconds until the last answer and the status codes (-1: a connection that
    broke, after which the request was sent again; -409: the answer to such a repeat when the
    first one had been stored). ``sent``, if given, gets the wall-clock time each thread's
    decision was first sent."""
    todo: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    for item in pending.items():
        todo.put_nowait(item)
    codes: Counter[int] = Counter()
    body = decision or {"type": "approve"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as c:
        async def client() -> None:
            while not todo.empty():
                tid, iid = todo.get_nowait()
                if sent is not None:
                    sent[tid] = time.time()
                for attempt in range(3):
                    try:
                        r = await c.post(f"/api/threads/{tid}/decisions",
                                         json={"interrupt_id": iid, "decisions": [body]})
                    except httpx.TransportError:  # the connection broke: send it again (a
                        codes[-1] += 1            # decision stored before is then a 409)
                        continue
                    codes[r.status_code if attempt == 0 or r.status_code != 409 else -409] += 1
                    break

        t0 = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        return time.perf_counter() - t0, codes


def wait_until(pred: Any, limit: float) -> float:
    t0 = time.perf_counter()
    while not pred():
        if time.perf_counter() - t0 > limit:
            raise RuntimeError("timed out")
        time.sleep(0.05)
    return time.perf_counter() - t0


MODES = {"combined": 0, "split-1": 1, "split": 2}
"""Throughput modes and their worker processes: one combined server, or an API-only server
with one or two workers."""


def throughput(dsn: str, url: str, mode: str, n: int, clients: int, work: Path) -> dict[str, Any]:
    from scenario import percentile

    workers_n = MODES[mode]
    pg_util.reset_schema(dsn, SCHEMA)
    exec_log = work / f"exec-{mode}.log"
    exec_log.write_text("")
    pending = asyncio.run(prefill(url, "go", n))
    procs: list[Proc] = []
    try:
        if mode == "combined":
            procs.append(serve(url, exec_log))
        else:
            procs.append(serve(url, exec_log, "--api-only"))
            procs += [worker(url, exec_log, f"worker {i}") for i in range(1, workers_n + 1)]
        api = procs[0]
        cpu0 = [p.cpu() for p in procs]
        sent: dict[str, float] = {}
        t0 = time.perf_counter()
        try:
            accepted_s, codes = asyncio.run(post_decisions(f"http://127.0.0.1:{api.port}",
                                                           pending, clients, sent=sent))
        except Exception:
            for p in procs:
                log(f"--- {p.name} (exit {p.proc.poll()}):\n{''.join(p.lines[-40:])}")
            raise
        wait_until(lambda: db_count(dsn, "completed") == n, 600)
        finished_s = time.perf_counter() - t0
        cpu = [p.cpu() - c for p, c in zip(procs, cpu0, strict=True)]
    finally:
        for p in procs:
            p.stop()
    rows = executions(exec_log)
    starts = Counter(k for kind, k, _ in rows if kind == "S")
    ends = Counter(k for kind, k, _ in rows if kind == "F")
    began = started_at(exec_log)
    to_start = [began[t] - sent[t] for t in pending if t in began and t in sent]
    return {
        "mode": mode, "workers": workers_n, "threads": n, "clients": clients,
        "status_codes": dict(codes),
        "accepted_s": accepted_s, "accepted_per_s": n / accepted_s,
        "finished_s": finished_s, "finished_per_s": n / finished_s,
        "finished_per_cpu_s": n / max(sum(cpu), 1e-9),
        "to_tool_start_ms_p50": percentile(to_start, 50) * 1000.0,
        "to_tool_start_ms_p95": percentile(to_start, 95) * 1000.0,
        "tools_exactly_once": all(starts[t] == 1 and ends[t] == 1 for t in pending)
        and len(starts) == n and len(ends) == n,
        "tools_started": sum(starts.values()), "tools_finished": sum(ends.values()),
        "ran_in_api_process": sum(1 for _, _, pid in rows if pid == procs[0].pid)
        if mode == "split" else None,
        "cpu_s": {p.name: round(c, 2) for p, c in zip(procs, cpu, strict=True)},
    }


def kill_phase(dsn: str, url: str, n: int, clients: int, lease: float,
               work: Path) -> dict[str, Any]:
    pg_util.reset_schema(dsn, SCHEMA)
    exec_log = work / "exec-kill.log"
    exec_log.write_text("")
    pending = asyncio.run(prefill(url, "slow", n))
    procs: list[Proc] = []
    try:
        api = serve(url, exec_log, "--api-only")
        w1 = worker(url, exec_log, "worker 1", "--claim-lease", str(lease))
        w2 = worker(url, exec_log, "worker 2", "--claim-lease", str(lease))
        procs = [api, w1, w2]

        async def decide_and_kill() -> tuple[float, Counter[int], float]:
            task = asyncio.create_task(post_decisions(f"http://127.0.0.1:{api.port}", pending,
                                                      clients))
            give_up = time.perf_counter() + 120
            while True:  # until worker 1 is inside a tool
                if time.perf_counter() > give_up:
                    task.cancel()
                    raise RuntimeError("worker 1 never started a tool:\n"
                                       + "".join(w1.lines[-40:]))
                rows = executions(exec_log)
                started = Counter(k for kind, k, pid in rows if pid == w1.pid and kind == "S")
                done = Counter(k for kind, k, pid in rows if pid == w1.pid and kind == "F")
                if any(started[k] > done[k] for k in started) and len(started) >= 5:
                    break
                await asyncio.sleep(0.01)
            os.kill(w1.pid, signal.SIGKILL)
            killed_at = time.perf_counter()
            secs, codes = await task
            return secs, codes, killed_at

        _, codes, killed_at = asyncio.run(decide_and_kill())
        w1.proc.wait(10)
        rows = executions(exec_log)
        in_tool = sorted({k for kind, k, pid in rows if pid == w1.pid and kind == "S"}
                         - {k for kind, k, pid in rows if pid == w1.pid and kind == "F"})

        def settled() -> bool:
            return db_count(dsn, "completed") + db_count(dsn, "interrupted") == n

        wait_until(settled, 600)
        settle_s = time.perf_counter() - killed_at
        completed = db_count(dsn, "completed")
        asked = asyncio.run(outcome_unknown(f"http://127.0.0.1:{api.port}", dsn))
        before = executions(exec_log)
        answered_codes: Counter[int] = Counter()
        if asked:
            _, answered_codes = asyncio.run(post_decisions(
                f"http://127.0.0.1:{api.port}", asked, clients,
                {"type": "respond", "message": "checked by hand: it ran"}))
            wait_until(lambda: db_count(dsn, "completed") == n, 120)
        final = db_count(dsn, "completed")
        after = executions(exec_log)
    finally:
        for p in procs:
            p.stop()
    starts = Counter(k for kind, k, _ in after if kind == "S")
    return {
        "threads": n, "clients": clients, "claim_lease_s": lease,
        "status_codes": dict(codes), "killed_worker_in_tool": len(in_tool),
        "completed_before_answers": completed, "outcome_unknown": len(asked),
        "killed_calls_all_asked": set(in_tool) <= set(asked),
        "asked_never_started": sum(1 for t in asked if starts[t] == 0),
        "started_twice": sum(1 for v in starts.values() if v > 1),
        "never_started": sum(1 for t in pending if starts[t] == 0),
        "unsettled": n - completed - len(asked),
        "settled_after_kill_s": settle_s,
        "answers": dict(answered_codes),
        "tools_started_after_answers": len(after) - len(before),
        "all_completed": final == n,
    }


async def outcome_unknown(base: str, dsn: str) -> dict[str, str]:
    """Thread id -> interrupt id of every pending "outcome unknown" request."""
    out: dict[str, str] = {}
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        before = None
        while True:
            params: dict[str, Any] = {"status": "interrupted", "limit": 500}
            if before:
                params.update(before=before[0], before_id=before[1])
            page = (await c.get("/api/threads", params=params)).json()
            for t in page["threads"]:
                detail = (await c.get(f"/api/threads/{t['thread_id']}")).json()
                for intr in detail["interrupts"]:
                    reasons = [a.get("reason") for a in intr["value"]["action_requests"]]
                    if "outcome_unknown" in reasons:
                        out[t["thread_id"]] = intr["id"]
            if not page.get("next_before"):
                return out
            before = (page["next_before"], page["next_before_id"])


class InboxStream:
    """``GET /api/inbox/events`` read in a thread: (arrival time, event, data) as they come."""

    def __init__(self, url: str) -> None:
        import queue
        import threading

        self.events: queue.Queue[tuple[float, str, dict[str, Any]]] = queue.Queue()
        self.open = threading.Event()
        threading.Thread(target=self._run, args=(url,), daemon=True).start()
        if not self.open.wait(20):
            raise RuntimeError("the inbox stream did not open")

    def _run(self, url: str) -> None:
        with httpx.Client(timeout=httpx.Timeout(10, read=None)) as c, \
                c.stream("GET", url) as r:
            self.open.set()
            block: dict[str, str] = {}
            for line in r.iter_lines():
                if not line:
                    if "event" in block:
                        self.events.put((time.perf_counter(), block["event"],
                                         json.loads(block.get("data", "null"))))
                    block = {}
                elif not line.startswith(":") and ":" in line:
                    k, _, v = line.partition(":")
                    block[k] = v.lstrip(" ")

    def until(self, pred: Any, within: float = 30.0) -> float:
        deadline = time.perf_counter() + within
        while True:
            at, event, data = self.events.get(timeout=max(0.01, deadline - time.perf_counter()))
            if pred(event, data):
                return at


def inbox_latency(dsn: str, url: str, n: int, work: Path) -> dict[str, Any]:
    """Two API-only servers and a worker, every one polling only every 30 s: ``n`` decisions
    posted one after another to server A; when server B's inbox stream shows each request
    resolved, and the thread completed (after the worker ran it)."""
    from scenario import percentile

    pg_util.reset_schema(dsn, SCHEMA)
    exec_log = work / "exec-latency.log"
    exec_log.write_text("")
    pending = asyncio.run(prefill(url, "go", n))
    procs: list[Proc] = []
    resolved: list[float] = []
    completed: list[float] = []
    try:
        a = serve(url, exec_log, "--api-only", "--poll-interval", "30")
        b = serve(url, exec_log, "--api-only", "--poll-interval", "30")
        procs = [a, b, worker(url, exec_log, "worker", "--poll-interval", "30")]
        stream = InboxStream(f"http://127.0.0.1:{b.port}/api/inbox/events")
        time.sleep(1)  # every process listens
        with httpx.Client(base_url=f"http://127.0.0.1:{a.port}", timeout=30) as c:
            for tid, iid in pending.items():
                t0 = time.perf_counter()
                r = c.post(f"/api/threads/{tid}/decisions",
                           json={"interrupt_id": iid, "decisions": [{"type": "approve"}]})
                assert r.status_code == 202, r.text
                resolved.append(stream.until(
                    lambda e, d, i=iid: e == "request_resolved" and d["interrupt_id"] == i)
                    - t0)
                completed.append(stream.until(
                    lambda e, d, t=tid: e == "thread_updated" and d["thread"]["thread_id"] == t
                    and d["thread"]["status"] == "completed") - t0)
    finally:
        for p in procs:
            p.stop()
    ms = 1000.0
    return {"decisions": n, "poll_interval_s": 30,
            "resolved_ms_p50": percentile(resolved, 50) * ms,
            "resolved_ms_p95": percentile(resolved, 95) * ms,
            "resolved_ms_max": max(resolved) * ms,
            "completed_ms_p50": percentile(completed, 50) * ms,
            "completed_ms_p95": percentile(completed, 95) * ms,
            "completed_ms_max": max(completed) * ms}


def run(args: argparse.Namespace) -> dict[str, Any]:
    dsn = args.pg_dsn
    url = f"{dsn}?options=-csearch_path%3D{SCHEMA}"
    results: dict[str, Any] = {"machine": machine_info(), "started": time.time()}
    with tempfile.TemporaryDirectory(prefix="interlock-workers-") as tmp:
        work = Path(tmp)
        for mode in [*MODES] * (2 if args.rounds > 1 else 1):
            r = throughput(dsn, url, mode, args.threads, args.clients, work)
            results.setdefault("throughput", []).append(r)
            log(f"  {mode:8s}: {r['threads']} decisions by {r['clients']} clients: accepted "
                f"{r['accepted_per_s']:.0f}/s, finished {r['finished_per_s']:.0f}/s "
                f"({r['finished_s']:.1f} s), {r['finished_per_cpu_s']:.0f} per CPU-second; "
                f"decision to tool start {r['to_tool_start_ms_p50']:.0f} / "
                f"{r['to_tool_start_ms_p95']:.0f} ms (p50 / p95); tools exactly once: "
                f"{r['tools_exactly_once']}; CPU s {r['cpu_s']}")
        lat = inbox_latency(dsn, url, args.latency_decisions, work)
        results["inbox_latency"] = lat
        log(f"  across processes (every poll 30 s apart): a decision posted to API A is "
            f"resolved in API B's inbox stream after {lat['resolved_ms_p50']:.0f} / "
            f"{lat['resolved_ms_p95']:.0f} ms (p50 / p95, max {lat['resolved_ms_max']:.0f}), "
            f"the thread completed (run by the worker) after {lat['completed_ms_p50']:.0f} / "
            f"{lat['completed_ms_p95']:.0f} ms")
        k = kill_phase(dsn, url, args.kill_threads, args.clients, args.claim_lease, work)
        results["kill"] = k
        log(f"  kill -9 of worker 1 with {k['killed_worker_in_tool']} call(s) in a tool: "
            f"{k['completed_before_answers']} completed, {k['outcome_unknown']} outcome-unknown "
            f"request(s) (every call killed in its tool among them: {k['killed_calls_all_asked']}; "
            f"{k['asked_never_started']} killed after `running` was stored, before the tool "
            f"started), "
            f"started twice {k['started_twice']}, unsettled {k['unsettled']}, settled "
            f"{k['settled_after_kill_s']:.1f} s after the kill; tools started after the "
            f"answers: {k['tools_started_after_answers']}")
    pg_util.drop_schema(dsn, SCHEMA)
    return results


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pg-dsn", default=DEFAULT_DSN)
    p.add_argument("--threads", type=int, default=1000)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--kill-threads", type=int, default=200)
    p.add_argument("--claim-lease", type=float, default=2.0)
    p.add_argument("--latency-decisions", type=int, default=50)
    p.add_argument("--rounds", type=int, default=2, help="1: each mode once; 2: alternating")
    p.add_argument("--out", default=str(HERE / "results"))
    args = p.parse_args()
    info = machine_info()
    log(f"machine: {info['cpu']}, {info['cores']} cores, load average "
        f"{tuple(round(x, 2) for x in info['loadavg'])}")
    results = run(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = out / f"workers-{time.strftime('%Y-%m-%d-%H%M', time.gmtime(results['started']))}.json"
    name.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    log(f"results: {name} (docs/benchmarks.md shows the newest: python bench/page.py)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

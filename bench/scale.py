"""Scale: an API server with many waiting requests. Not a test; not run by CI.

    .venv-bench/bin/python bench/scale.py [--pending 100000] [--backends sqlite,postgres]
        [--burst 10000] [--samples 50]

For each backend and for 0 and ``--pending`` waiting requests: fills a fresh store (the
threads are copies of one real paused thread of the benchmark scenario, written through the
storage Protocol), starts ``interlock serve`` in its own process and measures

* startup (process start until ``/api/health`` answers) and resident memory (VmRSS) once idle;
* the API: first page of 50 pending requests, a text-filtered page that must find the oldest
  request, a text filter matching every request, and the count, p50 / p95 of ``--samples``;
* CPU of the idle server (no client, no deadlines) over 10 s, and again right after a burst of
  ``--burst`` changes written by another process.

On Postgres the tables are ``ANALYZE``d after the fill, as autovacuum would have done by then
in a running system (``scale_inbox.py`` does the same). Prints a table; writes
``bench/results/scale.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import socket
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

import httpx  # noqa: E402
import pg_util  # noqa: E402
from il_side import InterlockSystem  # noqa: E402
from scenario import machine_info, percentile  # noqa: E402

from interlock import Interrupt  # noqa: E402
from interlock.authz import read_keys  # noqa: E402
from interlock.storage import from_url  # noqa: E402
from interlock.storage.base import Checkpointer, Commit  # noqa: E402

DEFAULT_DSN = os.environ.get("INTERLOCK_BENCH_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
SCHEMA = "bench_scale"


def url_of(backend: str, workdir: Path, dsn: str) -> str:
    if backend == "sqlite":
        return f"sqlite:///{workdir / 'scale.db'}"
    return f"{dsn}?options=-csearch_path%3D{SCHEMA}"


def reset(backend: str, workdir: Path, dsn: str) -> None:
    if backend == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            Path(str(workdir / "scale.db") + suffix).unlink(missing_ok=True)
    else:
        pg_util.reset_schema(dsn, SCHEMA)


async def fill(store: Checkpointer, n: int, template: Any, *, tag: str = "p", start: int = 0,
               reviewers: Callable[[int], list[str] | None] | None = None) -> None:
    """Copies ``start`` ... ``n - 1`` of the paused template thread, newest last, 64 commits in
    flight; ``reviewers(i)``: the roles that may decide copy ``i`` (default: the template's)."""
    t0 = template.thread
    sem = asyncio.Semaphore(64)

    async def one(i: int) -> None:
        tid = f"{tag}{i:06d}"
        at = t0.updated_at.replace(microsecond=0).timestamp() + i / 1000
        from datetime import UTC, datetime
        when = datetime.fromtimestamp(at, UTC)
        pending = [p.model_copy(update={"id": f"{p.id}-{i}", "created_at": when})
                   for p in t0.pending]
        if reviewers is not None:
            pending = [with_reviewers(p, reviewers(i)) for p in pending]
        rec = t0.model_copy(update={
            "thread_id": tid, "version": 1, "created_at": when, "updated_at": when,
            "pending": pending, "lease_owner": None, "lease_until": None,
            "preview": f"request {tid} (order {order_number(i)}): {t0.preview}",
            "audit_seq": 0, "audit_hash": ""})
        journal = [e.model_copy() for e in template.journal.values()]
        async with sem:
            # a commit brings the thread's read keys, as the run's transaction computes them
            await store.commit(Commit(thread=rec, messages=list(template.messages),
                                      journal=journal, readers=read_keys(rec)),
                               expected_version=None)

    for first in range(start, n, 2000):
        await asyncio.gather(*(one(i) for i in range(first, min(n, first + 2000))))


def order_number(i: int) -> str:
    """A value only copy ``i`` holds, shaped like the ids real requests carry (a random-looking
    hex string, as ``uuid4().hex``), unlike the sequential thread ids of the copies."""
    return hashlib.sha256(f"order-{i}".encode()).hexdigest()[:16]


def with_reviewers(intr: Interrupt, roles: list[str] | None) -> Interrupt:
    """A review interrupt whose calls only holders of ``roles`` may decide."""
    value = intr.value
    if isinstance(value, dict):
        value = {**value, "review_configs": [{**c, "reviewers": roles}
                                             for c in value.get("review_configs", [])]}
    else:
        value = value.model_copy(update={"review_configs": [
            c.model_copy(update={"reviewers": roles}) for c in value.review_configs]})
    return intr.model_copy(update={"value": value})


async def burst(store: Checkpointer, n: int) -> None:
    """``n`` changes of existing waiting threads (a new version each, same content)."""
    sem = asyncio.Semaphore(64)

    async def one(i: int) -> None:
        async with sem:
            snap = await store.load(f"p{i:06d}")
            assert snap is not None
            t = snap.thread.model_copy(update={"version": snap.thread.version + 1})
            await store.commit(Commit(thread=t, readers=read_keys(t)),
                               expected_version=snap.thread.version)

    await asyncio.gather(*(one(i) for i in range(n)))


def template_thread(workdir: Path) -> Any:
    s = InterlockSystem("sqlite", sqlite_path=str(workdir / "template.db"))
    s.open()
    s.pause("template")
    snap = asyncio.run(s.checkpointer.load("template"))
    s.close()
    return snap


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def serve(url: str, extra: list[str] | None = None) -> tuple[subprocess.Popen[bytes], str, float]:
    """``interlock serve`` of the scenario's agent on ``url`` (with ``extra`` options); returns
    the process, its base URL and the seconds until it answered."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "interlock.cli", "serve", "scale_agent:agent", "--db", url,
         "--port", str(port), "--log-level", "warning", "--no-dispatch", *(extra or [])],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    while True:
        try:
            if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "server died")
        time.sleep(0.02)
    return proc, base, time.perf_counter() - t0


def latency(client: httpx.Client, path: str, params: dict[str, Any], n: int,
            check: Any = None) -> dict[str, float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = client.get(path, params=params)
        times.append((time.perf_counter() - t0) * 1e3)
        r.raise_for_status()
        if check is not None:
            check(r.json())
    return {"p50_ms": statistics.median(times), "p95_ms": percentile(times, 95)}


def idle_cpu(pid: int, seconds: float) -> float:
    c0, t0 = cpu_seconds(pid), time.perf_counter()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - c0) / (time.perf_counter() - t0)


def measure(backend: str, pending: int, args: argparse.Namespace, workdir: Path,
            template: Any) -> dict[str, Any]:
    reset(backend, workdir, args.pg_dsn)
    url = url_of(backend, workdir, args.pg_dsn)
    store = from_url(url)
    t0 = time.perf_counter()
    asyncio.run(fill(store, pending, template))
    fill_s = time.perf_counter() - t0
    asyncio.run(store.close())
    if backend == "postgres" and pending:
        pg_util.analyze_schema(args.pg_dsn, SCHEMA)
    proc, base, startup = serve(url)
    out: dict[str, Any] = {"pending": pending, "fill_s": fill_s, "startup_s": startup}
    try:
        time.sleep(2)
        out["rss_mb"] = rss_mb(proc.pid)
        out["idle_cpu_pct"] = idle_cpu(proc.pid, args.idle)
        if pending:
            with httpx.Client(base_url=base, timeout=30) as c:
                def first_page(d: dict[str, Any]) -> None:
                    assert len(d["threads"]) == 50
                out["first_page"] = latency(c, "/api/threads", {
                    "status": "interrupted", "limit": 50}, args.samples, first_page)

                def oldest(d: dict[str, Any]) -> None:
                    assert [t["thread_id"] for t in d["threads"]] == ["p000000"]
                out["search_oldest"] = latency(c, "/api/threads", {
                    "status": "interrupted", "limit": 50, "q": "request p000000"},
                    args.samples, oldest)
                out["search_common"] = latency(c, "/api/threads", {
                    "status": "interrupted", "limit": 50, "q": "write_file"}, args.samples,
                    first_page)

                def counted(d: dict[str, Any]) -> None:
                    assert d["total"] == pending
                out["count"] = latency(c, "/api/threads", {
                    "status": "interrupted", "limit": 1, "count": "true"}, args.samples,
                    counted)
            n = min(args.burst, pending)
            bstore = from_url(url)
            t0 = time.perf_counter()
            asyncio.run(burst(bstore, n))
            out["burst"] = {"changes": n, "seconds": time.perf_counter() - t0}
            asyncio.run(bstore.close())
            time.sleep(3)
            out["idle_cpu_after_burst_pct"] = idle_cpu(proc.pid, args.idle)
            out["rss_after_burst_mb"] = rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pending", type=int, default=100_000)
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--burst", type=int, default=10_000)
    p.add_argument("--samples", type=int, default=50)
    p.add_argument("--idle", type=float, default=10.0,
                   help="seconds over which the idle server's CPU is measured")
    p.add_argument("--pg-dsn", default=DEFAULT_DSN)
    p.add_argument("--out", default=str(HERE / "results" / "scale.json"))
    args = p.parse_args()
    info = machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, {info['ram_gib']} GiB, Python "
          f"{info['python']}, load average {tuple(round(x, 2) for x in info['loadavg'])}")
    results: dict[str, Any] = {"machine": info, "runs": {}}
    with tempfile.TemporaryDirectory() as d:
        workdir = Path(d)
        template = template_thread(workdir)
        for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
            for pending in (0, args.pending):
                r = measure(backend, pending, args, workdir, template)
                results["runs"][f"{backend}-{pending}"] = r
                line = (f"{backend:8s} {pending:>7,} pending: fill {r['fill_s']:.1f} s, startup "
                        f"{r['startup_s']:.2f} s, RSS {r['rss_mb']:.0f} MB, idle CPU "
                        f"{r['idle_cpu_pct']:.1f} %")
                if pending:
                    line += (f"\n    first page p50 {r['first_page']['p50_ms']:.1f} ms "
                             f"(p95 {r['first_page']['p95_ms']:.1f}); search oldest p50 "
                             f"{r['search_oldest']['p50_ms']:.1f} ms (p95 "
                             f"{r['search_oldest']['p95_ms']:.1f}); search matching all p50 "
                             f"{r['search_common']['p50_ms']:.1f} ms; count p50 "
                             f"{r['count']['p50_ms']:.1f} ms"
                             f"\n    burst of {r['burst']['changes']:,} changes in "
                             f"{r['burst']['seconds']:.1f} s; idle CPU after it "
                             f"{r['idle_cpu_after_burst_pct']:.1f} %, RSS "
                             f"{r['rss_after_burst_mb']:.0f} MB")
                print(line, flush=True)
    finish(results, args)
    return 0


def finish(results: dict[str, Any], args: argparse.Namespace) -> None:
    """Drop the benchmark's Postgres schema (if it ran there) and write ``results`` to
    ``args.out`` with the load average at the end."""
    if "postgres" in args.backends:
        pg_util.drop_schema(args.pg_dsn, SCHEMA)
    results["loadavg_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())

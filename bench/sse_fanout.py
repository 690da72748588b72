"""Live updates for many reviewers: SSE subscribers of one server process. Not a test.

    .venv-bench/bin/python bench/sse_fanout.py [--subscribers 200] [--decisions 30]
        [--client-procs 2] [--idle 32] [--backend sqlite|postgres]

Starts ``interlock serve`` in its own process on an empty store, with a token file of
``--subscribers`` reviewers (role ``ops``) plus a lead (same role) who starts ``--decisions``
runs of the benchmark scenario (``scenario.py``) through the API, each paused on its
approval. ``--client-procs`` other processes open the
subscribers' streams (``GET /api/inbox/events``, one connection each, ``httpx`` streaming
clients, each with its own token). Then

* **idle CPU** of the server with every stream open and nothing happening, over ``--idle``
  seconds (more than one keepalive period, so the heartbeats are in it);
* **fan-out latency**: the deciding reviewer approves the paused requests one at a time
  (``POST /api/threads/{id}/decisions``, ``--gap`` seconds apart); for each decision and each
  subscriber, the time from sending the POST until that subscriber has read the
  ``request_resolved`` event of the request. Clocks: ``time.monotonic()``, one clock for
  every process of the machine. Reported: p50 / p95 / max over all (decision, subscriber)
  pairs, and p95 over decisions of the time until the *last* subscriber saw it ("seen by
  all"). Every subscriber must see every decision once (checked), and every approval must
  run its tool (the thread completes; checked).

Prints the figures; writes ``bench/results/sse_fanout.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DEFAULT_DSN = os.environ.get("INTERLOCK_BENCH_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
SCHEMA = "bench_sse"


# -- the subscribers (child processes) ------------------------------------------------------

async def subscribe_all(base: str, tokens: list[str]) -> dict[str, Any]:
    """Open one stream per token; print ``ready`` once all are connected; on ``stop`` (stdin)
    return what each stream saw: ``request_resolved`` arrival times by interrupt id."""
    import httpx

    seen: list[dict[str, float]] = [{} for _ in tokens]
    dupes = [0]
    keepalives = [0]
    connected = 0
    all_connected = asyncio.Event()
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)

    async def one(client: httpx.AsyncClient, i: int, token: str) -> None:
        nonlocal connected
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        async with client.stream("GET", "/api/inbox/events", headers=headers) as r:
            r.raise_for_status()
            event = ""
            async for line in r.aiter_lines():
                if line.startswith(": connected"):
                    connected += 1
                    if connected == len(tokens):
                        all_connected.set()
                elif line.startswith(": keepalive"):
                    keepalives[0] += 1
                elif line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "request_resolved":
                    now = time.monotonic()
                    iid = json.loads(line[6:])["interrupt_id"]
                    if iid in seen[i]:
                        dupes[0] += 1
                    else:
                        seen[i][iid] = now
                elif not line:
                    event = ""

    loop = asyncio.get_running_loop()
    async with httpx.AsyncClient(base_url=base, timeout=None, limits=limits) as client:
        tasks = [asyncio.create_task(one(client, i, t)) for i, t in enumerate(tokens)]
        waiter = asyncio.create_task(all_connected.wait())
        done, _ = await asyncio.wait({waiter, *tasks}, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            for t in done:
                t.result()  # a stream that failed to open: raise its error
        print("ready", flush=True)
        await loop.run_in_executor(None, sys.stdin.readline)  # the parent says stop
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {"seen": seen, "duplicates": dupes[0], "keepalives": keepalives[0]}


def child_main(base: str, tokens_file: str) -> int:
    tokens = json.loads(Path(tokens_file).read_text())
    out = asyncio.run(subscribe_all(base, tokens))
    print(json.dumps(out), flush=True)
    return 0


# -- the parent -----------------------------------------------------------------------------

def empty_store(backend: str, workdir: Path, dsn: str) -> str:
    """The URL of an empty store."""
    if backend == "sqlite":
        return f"sqlite:///{workdir / 'sse.db'}"
    import pg_util

    pg_util.reset_schema(dsn, SCHEMA)
    return f"{dsn}?options=-csearch_path%3D{SCHEMA}"


def token_file(workdir: Path, subscribers: int) -> tuple[Path, list[str], str]:
    """Tokens of ``subscribers`` reviewers (role ``ops``) and of one lead who decides."""
    tokens = [secrets.token_hex(16) for _ in range(subscribers)]
    lead = secrets.token_hex(16)
    conf = {t: {"id": f"reviewer-{i:03d}", "roles": ["ops"]} for i, t in enumerate(tokens)}
    conf[lead] = {"id": "lead", "roles": ["ops"]}
    path = workdir / "tokens.json"
    path.write_text(json.dumps(conf))
    path.chmod(0o600)
    return path, tokens, lead


def measure(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    import httpx
    from scale import cpu_seconds, idle_cpu, rss_mb, serve
    from scenario import USER_TEXT, percentile

    url = empty_store(args.backend, workdir, args.pg_dsn)
    ids = [f"sse-{i:03d}" for i in range(args.decisions)]
    tokens_path, tokens, lead = token_file(workdir, args.subscribers)
    proc, base, startup = serve(url, extra=["--tokens", str(tokens_path)])
    out: dict[str, Any] = {"backend": args.backend, "subscribers": args.subscribers,
                           "decisions": args.decisions, "client_procs": args.client_procs,
                           "startup_s": startup}
    children: list[subprocess.Popen[str]] = []
    try:
        auth = {"Authorization": f"Bearer {lead}"}
        with httpx.Client(base_url=base, timeout=30, headers=auth) as c:
            iids = {}
            for tid in ids:  # the requests, raised while the server runs (it sees them)
                r = c.post("/api/threads", params={"wait": "true"},
                           json={"thread_id": tid, "message": USER_TEXT})
                if r.status_code != 200 or r.json()["status"] != "interrupted":
                    raise RuntimeError(f"run did not pause: {r.status_code} {r.text}")
                pending = c.get(f"/api/threads/{tid}").json()["interrupts"]
                iids[tid] = pending[0]["id"]
        out["rss_before_mb"] = rss_mb(proc.pid)
        out["idle_cpu_no_subscribers_pct"] = idle_cpu(proc.pid, args.idle_base)
        # the subscribers, split over the client processes
        share = [tokens[k::args.client_procs] for k in range(args.client_procs)]
        t0 = time.perf_counter()
        for k, part in enumerate(share):
            f = workdir / f"tokens-{k}.json"
            f.write_text(json.dumps(part))
            children.append(subprocess.Popen(
                [sys.executable, __file__, "--child", base, str(f)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        for ch in children:
            assert ch.stdout is not None
            line = ch.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"subscriber process failed to connect ({line!r})")
        out["connect_s"] = time.perf_counter() - t0
        time.sleep(2)
        out["rss_subscribed_mb"] = rss_mb(proc.pid)
        out["idle_cpu_pct"] = idle_cpu(proc.pid, args.idle)
        # decisions, one at a time
        posted: dict[str, float] = {}
        c0, w0 = cpu_seconds(proc.pid), time.perf_counter()
        with httpx.Client(base_url=base, timeout=30, headers=auth) as c:
            for tid in ids:
                iid = iids[tid]
                posted[iid] = time.monotonic()
                r = c.post(f"/api/threads/{tid}/decisions",
                           json={"interrupt_id": iid, "decisions": [{"type": "approve"}]})
                if r.status_code != 202:
                    raise RuntimeError(f"decision refused: {r.status_code} {r.text}")
                time.sleep(args.gap)
            time.sleep(1.0)
            out["cpu_during_decisions_pct"] = (100 * (cpu_seconds(proc.pid) - c0)
                                               / (time.perf_counter() - w0))
            unfinished = [tid for tid in ids
                          if c.get(f"/api/threads/{tid}").json()["status"] != "completed"]
        if unfinished:
            raise AssertionError(f"approved threads that did not complete: {unfinished}")
        results = []
        for ch in children:
            assert ch.stdin is not None and ch.stdout is not None
            ch.stdin.write("stop\n")
            ch.stdin.flush()
            results.append(json.loads(ch.stdout.readline()))
            ch.wait(timeout=30)
        seen = [s for r in results for s in r["seen"]]
        lat: list[float] = []
        last: list[float] = []
        missing = 0
        for iid, t in posted.items():
            arrivals = [s[iid] - t for s in seen if iid in s]
            missing += len(seen) - len(arrivals)
            lat += arrivals
            if arrivals:
                last.append(max(arrivals))
        if missing or any(r["duplicates"] for r in results):
            raise AssertionError(f"{missing} (decision, subscriber) pairs never arrived; "
                                 f"{sum(r['duplicates'] for r in results)} arrived twice")
        ms = [x * 1e3 for x in lat]
        last_ms = [x * 1e3 for x in last]
        out.update({
            "latency_p50_ms": statistics.median(ms), "latency_p95_ms": percentile(ms, 95),
            "latency_max_ms": max(ms), "all_seen_p50_ms": statistics.median(last_ms),
            "all_seen_p95_ms": percentile(last_ms, 95), "all_seen_max_ms": max(last_ms),
            "keepalives": sum(r["keepalives"] for r in results),
            "rss_after_mb": rss_mb(proc.pid),
        })
    finally:
        for ch in children:
            if ch.poll() is None:
                ch.kill()
                ch.wait()
        proc.terminate()
        proc.wait(timeout=30)
        if args.backend == "postgres":
            import pg_util

            pg_util.drop_schema(args.pg_dsn, SCHEMA)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--subscribers", type=int, default=200)
    p.add_argument("--decisions", type=int, default=30)
    p.add_argument("--client-procs", type=int, default=2)
    p.add_argument("--idle", type=float, default=32.0,
                   help="seconds of idle CPU measurement with the streams open (the server "
                   "sends a keepalive every 15 s)")
    p.add_argument("--idle-base", type=float, default=10.0,
                   help="seconds of idle CPU measurement before any stream is open")
    p.add_argument("--gap", type=float, default=0.5, help="seconds between decisions")
    p.add_argument("--backend", default="sqlite", choices=["sqlite", "postgres"])
    p.add_argument("--pg-dsn", default=DEFAULT_DSN)
    p.add_argument("--out", default=str(HERE / "results" / "sse_fanout.json"))
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        return child_main(*a.child)
    from scenario import machine_info

    info = machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, load "
          f"average {tuple(round(x, 2) for x in info['loadavg'])}", flush=True)
    with tempfile.TemporaryDirectory() as d:
        r = measure(a, Path(d))
    r["machine"] = info
    r["loadavg_end"] = os.getloadavg()
    print(f"{r['subscribers']} subscribers ({r['client_procs']} client processes), "
          f"{r['backend']}: connected in {r['connect_s']:.2f} s; server RSS "
          f"{r['rss_before_mb']:.0f} → {r['rss_subscribed_mb']:.0f} MB\n"
          f"  idle CPU: {r['idle_cpu_no_subscribers_pct']:.2f} % with no stream, "
          f"{r['idle_cpu_pct']:.2f} % with {r['subscribers']} open (target ≤ 5 %: "
          f"{'met' if r['idle_cpu_pct'] <= 5 else 'MISSED'})\n"
          f"  {r['decisions']} decisions, {a.gap:g} s apart: each subscriber's delay p50 "
          f"{r['latency_p50_ms']:.0f} ms, p95 {r['latency_p95_ms']:.0f} ms, max "
          f"{r['latency_max_ms']:.0f} ms; seen by all: p50 {r['all_seen_p50_ms']:.0f} ms, "
          f"p95 {r['all_seen_p95_ms']:.0f} ms (target ≤ 500 ms: "
          f"{'met' if r['all_seen_p95_ms'] <= 500 else 'MISSED'}), max "
          f"{r['all_seen_max_ms']:.0f} ms; server CPU meanwhile "
          f"{r['cpu_during_decisions_pct']:.0f} %", flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(r, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

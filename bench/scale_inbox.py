"""The inbox at scale: API pages, text search, a reviewer's list and the web inbox in headless
Chromium, with 1,000 / 10,000 / 100,000 waiting requests. Not a test; not run by CI.

    .venv-bench/bin/python bench/scale_inbox.py [--sizes 1000,10000,100000]
        [--backends sqlite,postgres] [--samples 50] [--browser-samples 10]

For each backend one store grows through the sizes (copies of one real paused thread of the
benchmark scenario, written through the storage Protocol; one request in 100 may only be
decided by the role ``dba``, the others by ``ops``). At each size ``interlock serve`` runs in
its own process with three tokens (an admin, ``dana`` holding ``dba``, ``otto`` holding ``ops``)
and is measured, p50 / p95 of ``--samples`` requests each:

* ``first_page``: the admin's first page of 50 pending requests;
* ``search_oldest``: a text-filtered page whose only match is the oldest request, searched by
  a value only it holds (an order number shaped like a ``uuid4().hex``);
  ``search_oldest_id``: the same page searched by its sequential thread id ``p000000``, whose
  trigrams (``p00``, ``000``) one in ten requests share (the worst case for a trigram index);
* ``search_common``: a text filter that every request matches;
* ``reviewer_dba``: dana's first page (she may decide 1 % of the requests, and read nothing
  else), ``reviewer_ops``: otto's (99 %);
* for each of these also the server's CPU time per request (``server_cpu_ms``), which the load
  of other processes inflates much less than the wall-clock figures;
* in Chromium (Debian ``chromium`` through Playwright's ``executable_path``), signed in as the
  admin: ``inbox_first_rows``, from navigation to the first row of the list on screen, and
  ``inbox_search_oldest``, from typing the oldest request's order number into the filter box
  until its row is the one row on screen (this includes the inbox's 200 ms typing pause).
  ``inbox_first_rows`` is what Playwright observes: its ``goto`` returns after the page's
  ``load`` event, and its wait for the row is a round trip to the page of its own. Beside it,
  timed inside the page from the start of the navigation (``performance.now()``, by a
  ``MutationObserver`` that an init script installs): ``inbox_first_row_in_dom``, when the first
  row is inserted, and ``inbox_first_row_next_frame``, the start of the next animation frame
  after it (the inserting frame's style, layout and paint are done by then).

On Postgres the tables are ``ANALYZE``d after each fill, as autovacuum would have done by
then in a running system. Prints a table; writes ``bench/results/scale_inbox.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import httpx  # noqa: E402
import pg_util  # noqa: E402
from scale import (  # noqa: E402
    DEFAULT_DSN,
    SCHEMA,
    cpu_seconds,
    fill,
    finish,
    order_number,
    reset,
    serve,
    template_thread,
    url_of,
)
from scale import latency as wall  # noqa: E402
from scenario import machine_info, percentile  # noqa: E402

from interlock.storage import from_url  # noqa: E402

TOKENS = {
    "admin-token-bench-0123456789": {"id": "root", "roles": ["admin"]},
    "dana-token-bench-0123456789": {"id": "dana", "roles": ["dba"]},
    "otto-token-bench-0123456789": {"id": "otto", "roles": ["ops"]},
}
ADMIN, DANA, OTTO = list(TOKENS)
OLDEST = "p000000"
TARGETS_MS = {"first_page": 20, "search_oldest": 50, "inbox_first_rows": 500,
              "inbox_search_oldest": 1000}


def roles_of(i: int) -> list[str]:
    return ["dba"] if i % 100 == 0 else ["ops"]


def chromium() -> str:
    import shutil

    path = os.environ.get("INTERLOCK_CHROMIUM") or shutil.which("chromium")
    if not path:
        raise SystemExit("needs Debian's chromium: apt-get install -y chromium")
    return path


def api(base: str, size: int, samples: int, pid: int) -> dict[str, Any]:
    """p50 / p95 wall-clock of each request, and the server's CPU time per request (which
    the load of other processes on the machine inflates much less than wall-clock)."""
    out: dict[str, Any] = {}

    def latency(client: httpx.Client, path: str, params: dict[str, Any], n: int,
                check: Any) -> dict[str, float]:
        c0 = cpu_seconds(pid)
        r = wall(client, path, params, n, check)
        r["server_cpu_ms"] = (cpu_seconds(pid) - c0) * 1e3 / n
        return r

    def client(token: str) -> httpx.Client:
        return httpx.Client(base_url=base, timeout=60,
                            headers={"Authorization": f"Bearer {token}"})

    page = {"status": "interrupted", "limit": 50}
    with client(ADMIN) as c:
        def full(d: dict[str, Any]) -> None:
            assert len(d["threads"]) == 50

        def oldest(d: dict[str, Any]) -> None:
            assert [t["thread_id"] for t in d["threads"]] == [OLDEST], d["threads"][:3]

        out["first_page"] = latency(c, "/api/threads", page, samples, full)
        out["search_oldest"] = latency(c, "/api/threads", {**page, "q": order_number(0)},
                                       samples, oldest)
        out["search_oldest_id"] = latency(c, "/api/threads", {**page, "q": OLDEST}, samples,
                                          oldest)
        out["search_common"] = latency(c, "/api/threads", {**page, "q": "write_file"},
                                       samples, full)
    with client(DANA) as c:
        def dba(d: dict[str, Any]) -> None:
            ids = [int(t["thread_id"][1:]) for t in d["threads"]]
            assert len(ids) == min(50, size // 100) and all(i % 100 == 0 for i in ids)

        out["reviewer_dba"] = latency(c, "/api/threads", page, samples, dba)
    with client(OTTO) as c:
        def ops(d: dict[str, Any]) -> None:
            ids = [int(t["thread_id"][1:]) for t in d["threads"]]
            assert len(ids) == 50 and not any(i % 100 == 0 for i in ids)

        out["reviewer_ops"] = latency(c, "/api/threads", page, samples, ops)
    return out


# Installed before the page's own scripts: when the first row is in the list, and the next
# animation frame after that, in performance.now() (milliseconds from the navigation's start)
FIRST_ROW_CLOCK = """
(() => {
  const seen = {};
  window.__benchFirstRow = seen;
  new MutationObserver((_, observer) => {
    if (seen.dom === undefined && document.querySelector("#list .row")) {
      seen.dom = performance.now();
      observer.disconnect();
      requestAnimationFrame(() => { seen.frame = performance.now(); });
    }
  }).observe(document, { subtree: true, childList: true });
})();
"""


def browser(base: str, samples: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    first: list[float] = []
    in_dom: list[float] = []
    next_frame: list[float] = []
    search: list[float] = []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=[
            "--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--no-first-run",
            "--disable-sync"])
        try:
            ctx = b.new_context(viewport={"width": 1280, "height": 900})
            ctx.add_init_script(f"sessionStorage.setItem('interlock.token', '{ADMIN}')")
            ctx.add_init_script(FIRST_ROW_CLOCK)
            for i in range(samples + 1):  # the first load (nothing cached) is reported apart
                pg = ctx.new_page()
                t0 = time.perf_counter()
                pg.goto(f"{base}/")
                pg.locator("#list .row").first.wait_for(state="visible", timeout=60_000)
                ms = (time.perf_counter() - t0) * 1e3
                first.append(ms)
                pg.wait_for_function("() => window.__benchFirstRow.frame !== undefined")
                seen = pg.evaluate("() => window.__benchFirstRow")
                in_dom.append(seen["dom"])
                next_frame.append(seen["frame"])
                if i < samples:
                    pg.close()
            # search on the last page: type the id, wait for its row to be the only one
            box = pg.locator("#search")
            for _ in range(samples):
                t0 = time.perf_counter()
                box.fill(order_number(0))
                pg.wait_for_function(
                    "id => { const r = [...document.querySelectorAll('#list .row')];"
                    " return r.length === 1 && r[0].dataset.threadId === id"
                    " && r[0].offsetParent !== null; }", arg=OLDEST, timeout=60_000)
                search.append((time.perf_counter() - t0) * 1e3)
                box.fill("")
                pg.wait_for_function(
                    "() => document.querySelectorAll('#list .row').length > 1",
                    timeout=60_000)
        finally:
            b.close()
    return {
        "inbox_first_rows": {"p50_ms": statistics.median(first[1:]),
                             "p95_ms": percentile(first[1:], 95), "cold_ms": first[0]},
        "inbox_first_row_in_dom": {"p50_ms": statistics.median(in_dom[1:]),
                                   "p95_ms": percentile(in_dom[1:], 95), "cold_ms": in_dom[0]},
        "inbox_first_row_next_frame": {"p50_ms": statistics.median(next_frame[1:]),
                                       "p95_ms": percentile(next_frame[1:], 95),
                                       "cold_ms": next_frame[0]},
        "inbox_search_oldest": {"p50_ms": statistics.median(search),
                                "p95_ms": percentile(search, 95)},
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--samples", type=int, default=50)
    p.add_argument("--browser-samples", type=int, default=10)
    p.add_argument("--pg-dsn", default=DEFAULT_DSN)
    p.add_argument("--out", default=str(HERE / "results" / "scale_inbox.json"))
    args = p.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    info = machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, {info['ram_gib']} GiB, Python "
          f"{info['python']}, load average {tuple(round(x, 2) for x in info['loadavg'])}",
          flush=True)
    results: dict[str, Any] = {"machine": info, "targets_ms": TARGETS_MS, "runs": {}}
    with tempfile.TemporaryDirectory() as d:
        workdir = Path(d)
        template = template_thread(workdir)
        tokens = workdir / "tokens.json"
        tokens.write_text(json.dumps(TOKENS))
        for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
            reset(backend, workdir, args.pg_dsn)
            url = url_of(backend, workdir, args.pg_dsn)
            done = 0
            for size in sizes:
                store = from_url(url)
                t0 = time.perf_counter()
                asyncio.run(fill(store, size, template, start=done, reviewers=roles_of))
                fill_s = time.perf_counter() - t0
                asyncio.run(store.close())
                done = size
                if backend == "postgres":
                    pg_util.analyze_schema(args.pg_dsn, SCHEMA)
                proc, base, _ = serve(url, ["--tokens", str(tokens), "--expiry-interval", "0"])
                load = os.getloadavg()[0]
                try:
                    r: dict[str, Any] = {"pending": size, "fill_s": fill_s, "loadavg": load}
                    r.update(api(base, size, args.samples, proc.pid))
                    r.update(browser(base, args.browser_samples))
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
                results["runs"][f"{backend}-{size}"] = r
                print(f"{backend:8s} {size:>7,} pending (load {load:.1f}): "
                      + ", ".join(f"{k} {v['p50_ms']:.1f}" for k, v in r.items()
                                  if isinstance(v, dict))
                      + f" ms p50; first load {r['inbox_first_rows']['cold_ms']:.0f} ms",
                      flush=True)
    finish(results, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Child process for figure (d): N threads paused at once, in a process of its own.

Prints one JSON line: time to create the N paused threads, bytes stored, peak RSS before and
after, and the time to resume randomly chosen threads. Peak RSS is ``VmHWM`` (the high-water
mark of this process's own memory): ``ru_maxrss`` is recorded too, but on Linux a child
inherits its parent's value across fork and exec, so it shows the parent's peak until the
child exceeds it.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenario import System, cycle, maxrss_kb, peak_rss_kb, rss_now_kb


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--system", choices=["langchain", "interlock"], required=True)
    p.add_argument("--backend", choices=["memory", "sqlite", "postgres"], required=True)
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--resumes", type=int, default=20)
    p.add_argument("--sqlite-path")
    p.add_argument("--pg-dsn")
    p.add_argument("--pg-schema")
    a = p.parse_args()

    system: System
    kwargs = {"sqlite_path": a.sqlite_path, "pg_dsn": a.pg_dsn}
    if a.pg_schema:
        kwargs["pg_schema"] = a.pg_schema
    if a.system == "langchain":
        from lc_side import LangChainSystem

        system = LangChainSystem(a.backend, **kwargs)
    else:
        from il_side import InterlockSystem

        system = InterlockSystem(a.backend, **kwargs)
        system.open()
    # one full cycle first, so that code loaded lazily is in the baseline
    cycle(system, "warm-up")
    gc.collect()
    base_max = peak_rss_kb()
    base_ru = maxrss_kb()
    base_rss = rss_now_kb()

    t0 = time.perf_counter()
    for i in range(a.n):
        system.pause(f"p{i}")
    create_s = time.perf_counter() - t0
    after_max = peak_rss_kb()
    after_ru = maxrss_kb()
    after_rss = rss_now_kb()

    stored = system.stored_bytes()

    rng = random.Random(7)
    picks = rng.sample(range(a.n), min(a.resumes, a.n))
    times = []
    for i in picks:
        t = time.perf_counter()
        system.resume(f"p{i}")
        times.append(time.perf_counter() - t)
    system.close()
    print(json.dumps({
        "n": a.n,
        "create_s": create_s,
        "per_thread_ms": create_s / a.n * 1e3,
        "bytes": stored,
        "maxrss_before_kb": base_max,
        "maxrss_after_kb": after_max,
        "ru_maxrss_before_kb": base_ru,
        "ru_maxrss_after_kb": after_ru,
        "rss_before_kb": base_rss,
        "rss_after_kb": after_rss,
        "peak_growth_mb": (after_max - base_max) / 1024,
        "resume_median_ms": statistics.median(times) * 1e3,
        "resume_max_ms": max(times) * 1e3,
        "resumes": len(times),
    }))


if __name__ == "__main__":
    main()

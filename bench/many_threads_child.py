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

from scenario import add_system_args, cycle, maxrss_kb, open_system, peak_rss_kb, rss_now_kb


def main() -> None:
    p = argparse.ArgumentParser()
    add_system_args(p)
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--resumes", type=int, default=20)
    a = p.parse_args()
    system = open_system(a)
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

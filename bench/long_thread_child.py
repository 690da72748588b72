"""Child process for figure (b), each system alone: warm cycles on long threads against warm
cycles on short threads, paired and interleaved, in a process of its own.

In figure (b) proper both systems share one process, alternating in blocks of cycles, so that
machine noise hits both alike. That also makes each side's garbage collections walk the other
side's heap, which grows with its history: a collection that falls inside one of interlock's
cycles late in the run costs more because LangChain's objects have grown, not because
interlock's work has. Run alone, the cost of a cycle is the system's own.

Comparing cycle 200 with cycle 10 of one thread puts minutes between the two measurements, and
on a small machine the noise of those minutes is larger than the difference sought. Here the
process builds ``--threads`` (T) "short" threads to ``--k-lo`` - 1 cycles and T "long" threads
to ``--k-hi`` - 1 cycles, then runs ``--rounds`` (R) rounds: in each, for i in 0..T-1, one
measured cycle on short thread i and one on long thread i, the order alternating from pair to
pair and from round to round. Every measured long cycle has a short cycle measured right next
to it, in the same process with the same heap and the same store. The measured cycles are
K_lo..K_lo+R-1 of the short threads and K_hi..K_hi+R-1 of the long ones.

The threads are built cycle by cycle in turn (long thread 0, 1, …, T-1, then the next cycle),
and the short threads take their cycles in the last K_lo - 1 turns, so every thread was last
used shortly before the measurement and their rows are interleaved in the store, as on a server
with many threads. interlock keeps the messages of recently used threads in a per-process cache
(256 threads); 2T threads must stay well under that.

Prints one JSON line: the parameters, the seconds the build took, and for "short" and "long"
the wall seconds (pause + resume, as ``scenario.cycle`` returns them) and CPU seconds
(``time.process_time``) of every measured cycle, in the order round 0 pair 0, round 0 pair 1, …
so that element j of "short" and of "long" form pair j; ``long_first`` says which of the two
ran first in each pair.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenario import add_system_args, cycle, open_system

CACHE_THREADS = 256
"""Threads whose messages interlock keeps in its per-process cache."""


def measure(system: Any, thread_id: str) -> tuple[float, float]:
    """One cycle on ``thread_id``: (wall seconds, CPU seconds)."""
    c0 = time.process_time()
    p_s, r_s = cycle(system, thread_id)
    return p_s + r_s, time.process_time() - c0


def main() -> None:
    p = argparse.ArgumentParser()
    add_system_args(p)
    p.add_argument("--k-lo", type=int, default=10, help="measured cycle of the short threads")
    p.add_argument("--k-hi", type=int, default=200, help="measured cycle of the long threads")
    p.add_argument("--threads", type=int, default=8, help="short threads, and as many long")
    p.add_argument("--rounds", type=int, default=3, help="measured cycles per thread")
    a = p.parse_args()
    if not 1 <= a.k_lo < a.k_hi:
        p.error("need 1 <= --k-lo < --k-hi")
    if a.threads < 1 or a.rounds < 1:
        p.error("--threads and --rounds must be at least 1")
    if 2 * a.threads > CACHE_THREADS // 2:
        p.error(f"2 x --threads must stay well under interlock's cache of {CACHE_THREADS} "
                "threads")
    system = open_system(a)
    short = [f"short-{i}" for i in range(a.threads)]
    long = [f"long-{i}" for i in range(a.threads)]

    t0 = time.perf_counter()
    for c in range(a.k_hi - 1):
        for i in range(a.threads):
            cycle(system, long[i])
            if c >= a.k_hi - a.k_lo:
                cycle(system, short[i])
    build_s = time.perf_counter() - t0

    out: dict[str, dict[str, list[float]]] = {
        "short": {"wall_s": [], "cpu_s": []},
        "long": {"wall_s": [], "cpu_s": []},
    }
    long_first: list[bool] = []
    for r in range(a.rounds):
        for i in range(a.threads):
            first_long = (i + r) % 2 == 1
            order = (("long", long[i]), ("short", short[i])) if first_long else \
                (("short", short[i]), ("long", long[i]))
            for key, thread_id in order:
                wall, cpu = measure(system, thread_id)
                out[key]["wall_s"].append(wall)
                out[key]["cpu_s"].append(cpu)
            long_first.append(first_long)
    system.close()
    print(json.dumps({
        "k_lo": a.k_lo, "k_hi": a.k_hi, "threads": a.threads, "rounds": a.rounds,
        "build_s": build_s, "long_first": long_first, **out,
    }))


if __name__ == "__main__":
    main()

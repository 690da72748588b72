"""Child process for figure (b), each system alone: K cycles on one thread in a process of
its own.

In figure (b) proper both systems share one process, alternating in blocks of cycles, so that
machine noise hits both alike. That also makes each side's garbage collections walk the other
side's heap, which grows with its history: a collection that falls inside one of interlock's
cycles late in the run costs more because LangChain's objects have grown, not because
interlock's work has. Run alone, the cost of the K-th cycle is the system's own.

Prints one JSON line: the wall and CPU (``time.process_time``) seconds of every cycle.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenario import add_system_args, cycle, open_system


def main() -> None:
    p = argparse.ArgumentParser()
    add_system_args(p)
    p.add_argument("--cycles", type=int, default=200)
    a = p.parse_args()
    system = open_system(a)
    wall, cpu = [], []
    for _ in range(a.cycles):
        c0 = time.process_time()
        p_s, r_s = cycle(system, "the-thread")
        cpu.append(time.process_time() - c0)
        wall.append(p_s + r_s)
    system.close()
    print(json.dumps({"wall_s": wall, "cpu_s": cpu}))


if __name__ == "__main__":
    main()

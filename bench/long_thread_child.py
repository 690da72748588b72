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

from scenario import System, cycle


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--system", choices=["langchain", "interlock"], required=True)
    p.add_argument("--backend", choices=["memory", "sqlite", "postgres"], required=True)
    p.add_argument("--cycles", type=int, default=200)
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

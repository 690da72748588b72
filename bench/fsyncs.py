"""Durable writes per cycle on SQLite: ``fsync`` / ``fdatasync`` calls counted with ``strace``.

    .venv-bench/bin/python bench/fsyncs.py            # needs strace (apt-get install strace)

Each system runs the benchmark's cycle (``scenario.py``) on a fresh SQLite file, once with
``--small`` and once with ``--large`` cycles, under ``strace -f -c``; the difference of the
counts divided by the difference of the cycles is the number per cycle (setup, warm-up and
shutdown cancel out). Both sides run with WAL and ``synchronous=FULL``, as in ``run.py``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def child(system: str, cycles: int, path: str) -> None:
    if system == "interlock":
        from il_side import InterlockSystem as System
    else:
        from lc_side import LangChainSystem as System
    s = System("sqlite", sqlite_path=path)
    if hasattr(s, "open"):
        s.open()
    for i in range(cycles):
        s.pause(f"t{i}")
        s.resume(f"t{i}")
    s.close()


def count(system: str, cycles: int) -> int:
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "strace.txt"
        subprocess.run(
            ["strace", "-f", "-c", "-o", str(out), "-e", "trace=fsync,fdatasync",
             sys.executable, __file__, "--child", system, str(cycles), str(Path(d) / "x.db")],
            check=True, stdout=subprocess.DEVNULL,
        )
        calls = 0
        for line in out.read_text().splitlines():
            cols = line.split()
            if cols and cols[-1] in ("fsync", "fdatasync") and re.fullmatch(r"\d+", cols[3]):
                calls += int(cols[3])
        return calls


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--small", type=int, default=10)
    p.add_argument("--large", type=int, default=30)
    p.add_argument("--child", nargs=3, metavar=("SYSTEM", "CYCLES", "PATH"),
                   help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]), a.child[2])
        return 0
    if shutil.which("strace") is None:
        print("strace is not installed (Debian: apt-get install strace)", file=sys.stderr)
        return 2
    for system in ("langchain", "interlock"):
        small, large = count(system, a.small), count(system, a.large)
        per = (large - small) / (a.large - a.small)
        print(f"{system:10} fsync+fdatasync: {small} after {a.small} cycles, {large} after "
              f"{a.large} → {per:.1f} per cycle")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

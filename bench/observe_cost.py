"""What observability costs per cycle: instructions counted by valgrind's callgrind.

``python bench/observe_cost.py`` runs, for each mode, ``valgrind --tool=callgrind`` over 30
warm-up cycles + 0 and 30 + N cycles (memory backend, the blocking API, ``bench/il_side.py``'s
system) and prints the difference divided by N: the instructions of one cycle.

Modes: ``off`` (nothing installed: the engine's hooks are ``is None`` checks), ``metrics``
(Prometheus counters), ``tracing`` (OpenTelemetry SDK spans to a no-op exporter), ``both``.
``--child MODE CYCLES`` is the measured process itself. Needs valgrind; ``--no-callgrind``
measures CPU time per cycle instead (a figure that moves with the load: a check that the
script works, not the cost to compare).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WARMUP = 30
MODES = ("off", "metrics", "tracing", "both")


def child(mode: str, cycles: int) -> None:
    sys.path.insert(0, str(HERE))
    from il_side import InterlockSystem

    if mode != "off":
        from interlock import observe

        tracing = metrics = None
        if mode in ("tracing", "both"):
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
            from opentelemetry.sdk.trace.export import SpanExportResult as Result

            class Discard(SpanExporter):
                def export(self, spans: object) -> Result:
                    return Result.SUCCESS

            from interlock.observe.tracing import Tracing

            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(Discard()))
            tracing = Tracing(provider)
        if mode in ("metrics", "both"):
            from interlock.observe.metrics import Metrics

            metrics = Metrics(tools=["write_file"])
        observe.install(observe.Observer(tracing=tracing, metrics=metrics))
    system = InterlockSystem("memory")
    for i in range(WARMUP + cycles):
        if i == WARMUP:
            started = time.process_time()
        system.pause(f"t{i}")
        system.resume(f"t{i}")
    if cycles:
        print(f"CPU {(time.process_time() - started) / cycles}", flush=True)
    if mode == "off":  # nothing of the extras was imported along the way
        loaded = [m for m in sys.modules if m.startswith(("opentelemetry", "prometheus_client"))]
        assert not loaded, loaded


def instructions(mode: str, cycles: int, src: str | None) -> int:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if src is not None:  # another checkout's library (e.g. the commit before a change)
        env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             sys.executable, __file__, "--child", mode, str(cycles)],
            check=True, capture_output=True, env=env)
        m = re.search(r"^summary:\s+(\d+)", out.read_text(), re.M)
        assert m is not None
        return int(m.group(1))


def cpu_per_cycle(mode: str, cycles: int, src: str | None) -> float:
    """CPU seconds per cycle of a child process (no valgrind: a figure that moves with the
    machine's load, for checking that the script works where valgrind is slow or absent)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, __file__, "--child", mode, str(cycles)], check=True,
                          capture_output=True, text=True, env=env)
    m = re.search(r"^CPU (\S+)$", done.stdout, re.M)
    assert m is not None, done.stdout
    return float(m.group(1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cycles", type=int, default=100)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--src", default=None,
                   help="measure the library in this src/ directory (mode off only makes "
                   "sense for a checkout without interlock.observe)")
    p.add_argument("--child", nargs=2, metavar=("MODE", "CYCLES"))
    p.add_argument("--no-callgrind", action="store_true",
                   help="CPU time per cycle instead of instruction counts (no valgrind)")
    p.add_argument("--out", default=str(HERE / "results"),
                   help="where observe-YYYY-MM-DD-HHMM.json goes (docs/benchmarks.md reads it)")
    a = p.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]))
        return
    base = None
    started = time.time()
    found: dict[str, float] = {}
    for mode in a.modes.split(","):
        if a.no_callgrind:
            per = cpu_per_cycle(mode, a.cycles, a.src)
        else:
            per = (instructions(mode, a.cycles, a.src)
                   - instructions(mode, 0, a.src)) / a.cycles
        base = per if mode == "off" else base
        extra = f" (+{(per / base - 1) * 100:.1f} %)" if base and mode != "off" else ""
        figure = (f"{per * 1e3:.2f} ms CPU" if a.no_callgrind
                  else f"{per / 1e6:.2f}M instructions")
        print(f"{mode:8} {figure} per cycle{extra}", flush=True)
        found[mode] = per
    if a.src is None:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        name = out / f"observe-{time.strftime('%Y-%m-%d-%H%M', time.gmtime(started))}.json"
        name.write_text(json.dumps({
            "started": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
            "cycles": a.cycles, ("cpu_s" if a.no_callgrind else "instructions"): found,
            "commit": subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
                                     capture_output=True, text=True, check=False).stdout.strip(),
        }, indent=1) + "\n")
        print(f"written {name}")


if __name__ == "__main__":
    main()

"""The scripted scenario both systems run, and the small helpers both sides share.

One *cycle* on a thread:

1. user message (200 characters);
2. the model proposes ``write_file`` with about 500 bytes of JSON arguments;
3. the run pauses for review (``write_file`` is gated, all decisions allowed);
4. the reviewer approves;
5. the tool runs and returns about 1 KB of text;
6. the model gives its final answer (200 characters).

The model on both sides is deterministic and decides from the conversation alone: if the last
message is the user's, it proposes the tool call (id ``call_<number of messages>``, unique in
the thread); otherwise it answers. The tool does not touch the disk: it returns a fixed
string, so what is measured is the framework, its storage and its durability settings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from collections.abc import Callable
from typing import Any, Protocol

USER_TEXT = (
    "Please write the quarterly summary for the operations team to reports/q3-summary.md. "
    "Include the incident count, the mean time to recovery and the three open follow-ups "
    "from the review."
)[:200].ljust(200, ".")

FINAL_TEXT = (
    "Done: the quarterly summary is in reports/q3-summary.md (incident count, mean time to "
    "recovery and the three open follow-ups). Tell me if the team wants a shorter version "
    "for the all-hands."
)[:200].ljust(200, ".")

_BODY = (
    "# Q3 operations summary\n\nIncidents: 14 (3 sev-2, 11 sev-3). Mean time to recovery: "
    "41 minutes, down from 58 in Q2.\n\nOpen follow-ups:\n1. Rotate the on-call escalation "
    "list before the holiday freeze.\n2. Add disk-pressure alerts to the batch cluster.\n3. "
    "Write the runbook for the payment-queue failover.\n\nThe full timeline of each incident "
    "is linked from the incident tracker; numbers are from the weekly reports of the SRE "
    "team and were checked against the paging history. Owners and due dates are agreed."
)
_PATH = "reports/q3-summary.md"
_CUT = len(_BODY)
while len(json.dumps({"path": _PATH, "content": _BODY[:_CUT]})) > 500:
    _CUT -= 1
WRITE_ARGS: dict[str, str] = {"path": _PATH, "content": _BODY[:_CUT]}
"""Exactly 500 bytes as compact-ish JSON (``json.dumps``)."""
WRITE_ARGS["content"] += " " * (500 - len(json.dumps(WRITE_ARGS)))

TOOL_RESULT = (
    "wrote reports/q3-summary.md (" + str(len(_BODY)) + " bytes). Contents as written:\n"
    + _BODY + "\n"
)
TOOL_RESULT = (TOOL_RESULT * 3)[:1024]

TOOL_NAME = "write_file"
TOOL_DOC = "Write a text file in the workspace."


def call_id(n_messages: int) -> str:
    """Tool-call id for a model call that sees ``n_messages`` messages (unique per thread)."""
    return f"call_{n_messages}"


class ToolCounter:
    """Counts real executions of the tool (each approved call must run exactly once)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, path: str, content: str) -> str:
        self.count += 1
        return TOOL_RESULT


class System(Protocol):
    """One side of the comparison on one backend (all calls are the sync public APIs)."""

    name: str
    backend: str

    def pause(self, thread_id: str) -> None:
        """Send the user message; must end paused on the write_file request."""

    def resume(self, thread_id: str) -> None:
        """Approve the pending request; must end with the final answer."""

    def stored_bytes(self) -> int: ...

    def describe_durability(self) -> str: ...

    def close(self) -> None: ...


def cycle(system: System, thread_id: str) -> tuple[float, float]:
    """One full cycle; returns (seconds to the pause, seconds from approval to the answer)."""
    t0 = time.perf_counter()
    system.pause(thread_id)
    t1 = time.perf_counter()
    system.resume(thread_id)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def rss_now_kb() -> int:
    """Current resident set size in KiB (Linux)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * (os.sysconf("SC_PAGE_SIZE") // 1024)


def maxrss_kb() -> int:
    """``ru_maxrss`` in KiB. On Linux it is carried over from the parent across fork and exec,
    so in a child started by a big parent it reports the parent's peak: see :func:`peak_rss_kb`.
    """
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def peak_rss_kb() -> int:
    """Peak resident set size of this process's own address space (``VmHWM``), in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return maxrss_kb()


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 100]."""
    if not values:
        return float("nan")
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0]
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def machine_info() -> dict[str, Any]:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_kb = 0
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem_kb = int(line.split()[1])
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_gib": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg": os.getloadavg(),
    }


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def add_system_args(p: argparse.ArgumentParser) -> None:
    """The arguments a child process of the benchmark needs to open one system's store."""
    p.add_argument("--system", choices=["langchain", "interlock"], required=True)
    p.add_argument("--backend", choices=["memory", "sqlite", "postgres"], required=True)
    p.add_argument("--sqlite-path")
    p.add_argument("--pg-dsn")
    p.add_argument("--pg-schema")


def open_system(a: argparse.Namespace) -> Any:
    """The system ``a`` names (see :func:`add_system_args`), its store opened."""
    kwargs = {"sqlite_path": a.sqlite_path, "pg_dsn": a.pg_dsn}
    if a.pg_schema:
        kwargs["pg_schema"] = a.pg_schema
    if a.system == "langchain":
        from lc_side import LangChainSystem

        return LangChainSystem(a.backend, **kwargs)
    from il_side import InterlockSystem

    system = InterlockSystem(a.backend, **kwargs)
    system.open()
    return system

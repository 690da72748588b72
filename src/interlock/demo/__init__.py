"""The sample operations agent behind ``interlock demo``.

``interlock.demo:agent`` is the demo agent on the demo's data directory (``$INTERLOCK_DEMO_DIR``,
default ``~/.interlock/demo``), so other commands can load it::

    interlock review --agent interlock.demo:agent

``$INTERLOCK_DEMO_MODEL`` (e.g. ``openai:gpt-4.1-mini``) selects a real model instead of the
scripted one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigurationError
from ..result import RunResult
from .model import SCENARIOS, ops_model
from .ops import build_agent, estimate_impact, is_read_only, make_policy, make_tools
from .sample import create_sample_db

if TYPE_CHECKING:
    from ..agent import Agent

DATA_DIR_ENV = "INTERLOCK_DEMO_DIR"
MODEL_ENV = "INTERLOCK_DEMO_MODEL"


def default_data_dir() -> Path:
    """``$INTERLOCK_DEMO_DIR``, or ``~/.interlock/demo``."""
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env).expanduser() if env else Path.home() / ".interlock" / "demo"


def reset_data_dir(data_dir: Path) -> None:
    """Remove the demo's databases from ``data_dir`` (other files are left alone)."""
    for name in ("interlock.db", "sample.db"):
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(data_dir, f"{name}{suffix}").unlink(missing_ok=True)


def prepare(data_dir: Path) -> Path:
    """A fresh demo: empty thread store and a new sample database. Returns the sample path."""
    data_dir.mkdir(parents=True, exist_ok=True)
    reset_data_dir(data_dir)
    return create_sample_db(data_dir / "sample.db")


def queue_runs(agent: Agent) -> list[RunResult]:
    """Start the demo's runs; with the scripted model each of them pauses for a reviewer."""
    return [agent.invoke(prompt, thread_id=thread_id) for thread_id, prompt in SCENARIOS]


_agent: Agent | None = None


def __getattr__(name: str) -> object:
    global _agent
    if name == "agent":
        if _agent is None:
            data_dir = default_data_dir()
            if not (data_dir / "sample.db").exists():
                raise ConfigurationError(
                    f"There is no demo data in {data_dir}: run `interlock demo` first, or set "
                    f"{DATA_DIR_ENV} to the directory `interlock demo --data-dir` used."
                )
            _agent = build_agent(data_dir, model=os.environ.get(MODEL_ENV) or None)
        return _agent
    raise AttributeError(f"module 'interlock.demo' has no attribute {name!r}")


__all__ = [
    "DATA_DIR_ENV",
    "MODEL_ENV",
    "SCENARIOS",
    "build_agent",
    "create_sample_db",
    "default_data_dir",
    "estimate_impact",
    "is_read_only",
    "make_policy",
    "make_tools",
    "ops_model",
    "prepare",
    "queue_runs",
    "reset_data_dir",
]

"""The sample operations agent behind ``interlock demo``.

``interlock.demo:agent`` is the demo agent on the demo's data directory (``$INTERLOCK_DEMO_DIR``,
default ``~/.interlock/demo``), so other commands can load it::

    interlock review --agent interlock.demo:agent

``$INTERLOCK_DEMO_MODEL`` (e.g. ``openai:gpt-4.1-mini``) selects a real model instead of the
scripted one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def claim(data_dir: Path) -> Iterator[None]:
    """Hold ``data_dir`` for one running demo: a second ``interlock demo`` on the same
    directory (started by you or, on a shared home, by someone else) is refused instead of
    wiping the databases the first one serves. A directory that belongs to another user is
    refused too."""
    if data_dir.exists() and not data_dir.is_dir():
        raise ConfigurationError(
            f"The demo directory {data_dir} is a file, not a directory. Use a directory: "
            f"interlock demo --data-dir DIR (or set {DATA_DIR_ENV}).")
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file in the way, a read-only or foreign parent
        raise ConfigurationError(
            f"The demo directory {data_dir} cannot be created: "
            f"{exc.strerror or type(exc).__name__}"
            f"{f' ({exc.filename})' if exc.filename and str(exc.filename) != str(data_dir) else ''}"
            f". Use a directory you can write: interlock demo --data-dir DIR (or set "
            f"{DATA_DIR_ENV})."
        ) from exc
    owner = data_dir.stat().st_uid
    if hasattr(os, "getuid") and owner != os.getuid():
        try:
            import pwd

            name = pwd.getpwuid(owner).pw_name
        except (ImportError, KeyError):
            name = f"uid {owner}"
        raise ConfigurationError(
            f"The demo directory {data_dir} belongs to {name}, not to you; its data is theirs. "
            f"Use your own: interlock demo --data-dir DIR (or set {DATA_DIR_ENV})."
        )
    try:
        lock = open(data_dir / "demo.lock", "a+", encoding="utf-8")  # noqa: SIM115 (held open)
    except OSError as exc:
        raise ConfigurationError(
            f"The demo directory {data_dir} cannot be written: "
            f"{exc.strerror or type(exc).__name__}. Use a directory you can write: interlock "
            f"demo --data-dir DIR (or set {DATA_DIR_ENV})."
        ) from exc
    try:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # not POSIX: no lock
            pass
        except OSError:
            lock.seek(0)
            pid = lock.read().strip() or "?"
            raise ConfigurationError(
                f"Another interlock demo (process {pid}) is running on {data_dir}; starting "
                f"again would replace the databases it serves. Stop it first (Ctrl-C), or run "
                f"this one elsewhere: interlock demo --data-dir DIR."
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        yield
    finally:
        lock.close()


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
    "claim",
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

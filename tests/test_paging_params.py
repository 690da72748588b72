"""Paging parameters from Python and the command line are whole numbers a store can take: a
limit or row id below its minimum, past a signed 64-bit integer, or not a whole number is a
clear error naming it, and nothing is read (SQLite raised ``OverflowError`` past 2**63 - 1,
and a negative ``after_id`` listed everything)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from cli.helpers import child_env, cli_argv
from interlock import Agent, ConfigurationError, InvalidText, ScriptedModel, SqliteCheckpointer


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    a = Agent(model=ScriptedModel(["hi"]), checkpointer=SqliteCheckpointer(tmp_path / "a.db"))
    a.invoke("hello", thread_id="t")
    return a


@pytest.mark.parametrize("call, name", [
    (lambda a: a.audit(after_id=2**64), "after_id"),
    (lambda a: a.audit("t", after_id=-5), "after_id"),
    (lambda a: a.audit(limit=0), "limit"),
    (lambda a: a.list_threads(limit=2**63), "limit"),
    (lambda a: a.list_threads(limit=True), "limit"),
    (lambda a: a.list_threads(limit=2.5), "limit"),
])
def test_out_of_range_paging_is_a_clear_error(agent: Agent, call: Any, name: str) -> None:
    with pytest.raises(ConfigurationError, match=f"{name}=.*whole number"):
        call(agent)


def test_the_largest_values_a_store_takes_still_answer(agent: Agent) -> None:
    assert len(agent.list_threads(limit=2**63 - 1)) == 1
    assert len(agent.audit(limit=2**63 - 1)) == len(agent.audit())
    assert agent.audit(after_id=2**63 - 1) == []


def test_a_cursor_no_store_can_hold_is_refused(agent: Agent) -> None:
    with pytest.raises(InvalidText):
        agent.list_threads(before_id="a\x00b")


@pytest.mark.parametrize("command", [["audit"], ["threads"]])
def test_the_cli_refuses_a_limit_past_what_a_store_takes(tmp_path: Path,
                                                         command: list[str]) -> None:
    out = subprocess.run(cli_argv(*command, "--db", f"sqlite:///{tmp_path / 'a.db'}",
                                  "--limit", str(2**64)),
                         capture_output=True, text=True, timeout=60, env=child_env())
    assert out.returncode == 2 and "--limit" in out.stderr and "Traceback" not in out.stderr

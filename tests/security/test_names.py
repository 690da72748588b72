"""Reserved actor names (``system:*``, ``rule:*`` ...) name the system in the audit log: no
person may act under them, on any surface. Cancel needs the roles of every pending call on
every surface, because the rule lives in the core."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from interlock import NotAuthorized, Reviewer, SqliteCheckpointer
from interlock.cli import main
from interlock.server import TokenAuth
from server.server_agents import EXECUTED, make_agent

RESERVED = ["system:expiry", "system", "rule:remember:thread:drop_table", "policy",
            "middleware:HumanInTheLoop"]


def _restricted(tmp_path: Path) -> str:
    """A SQLite store with one request only a dba may decide; returns its URL."""
    db = tmp_path / "t.db"
    agent = make_agent(SqliteCheckpointer(db))
    try:
        assert agent.invoke("drop customers", thread_id="r1").interrupted
    finally:
        agent.close()
    return f"sqlite:///{db}"


def _state(url: str) -> tuple[str, int, int]:
    agent = make_agent(SqliteCheckpointer(url.removeprefix("sqlite:///")))
    try:
        t = agent.get_thread("r1")
        return t.status, t.version, len(agent.audit("r1"))
    finally:
        agent.close()


@pytest.mark.parametrize("name", ["system:expiry", "rule:remember:thread:drop_table"])
def test_cli_cancel_under_a_reserved_name_is_refused(tmp_path: Path, name: str) -> None:
    url = _restricted(tmp_path)
    before = _state(url)
    result = CliRunner().invoke(main, ["cancel", "r1", "--db", url, "--reviewer", name,
                                       "--role", "dba"])
    assert result.exit_code == 1, result.output
    assert "is reserved" in result.output
    assert _state(url) == before


def test_cli_cancel_without_the_role_is_refused(tmp_path: Path) -> None:
    url = _restricted(tmp_path)
    before = _state(url)
    result = CliRunner().invoke(main, ["cancel", "r1", "--db", url, "--reviewer", "mallory"])
    assert result.exit_code == 1, result.output
    assert "may not cancel" in result.output and "dba" in result.output
    assert _state(url) == before
    ok = CliRunner().invoke(main, ["cancel", "r1", "--db", url, "--reviewer", "dana",
                                   "--role", "dba"])
    assert ok.exit_code == 0, ok.output
    assert _state(url)[0] == "idle"
    assert EXECUTED == []


@pytest.mark.parametrize("name", RESERVED)
def test_library_refuses_reserved_names_everywhere(tmp_path: Path, name: str) -> None:
    agent = make_agent(SqliteCheckpointer(tmp_path / "lib.db"))
    try:
        agent.invoke("drop customers", thread_id="r1")
        who = Reviewer(name, frozenset({"dba"}))
        for attempt in (
            lambda: agent.cancel("r1", reviewer=who),
            lambda: agent.cancel("r1", reviewer=name),
            lambda: agent.resume("r1", [{"type": "approve"}], reviewer=who),
            lambda: agent.invoke("hello", thread_id="r2", reviewer=who),
            lambda: agent.revoke("r1", "drop_table", reviewer=who),
        ):
            with pytest.raises(NotAuthorized, match="is reserved"):
                attempt()
        assert agent.get_thread("r1").status == "interrupted"
        assert [t.thread_id for t in agent.list_threads()] == ["r1"]
    finally:
        agent.close()
    assert EXECUTED == []


def test_token_files_cannot_name_reserved_reviewers() -> None:
    from interlock import ConfigurationError

    for name in RESERVED:
        with pytest.raises(ConfigurationError, match="reserved"):
            TokenAuth.from_config({"x" * 20: {"id": name, "roles": ["dba"]}})

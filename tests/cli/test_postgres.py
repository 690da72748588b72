"""The CLI against PostgreSQL: `--db postgresql://...` for reading, reviewing and auditing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import interlock.demo
from conftest import PG_DSN, require_postgres
from interlock import PostgresCheckpointer
from interlock.cli import main
from interlock.demo import build_agent, prepare, queue_runs

from .helpers import sample_rows

pytestmark = pytest.mark.postgres




@pytest.fixture
def pg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    require_postgres()
    import psycopg

    monkeypatch.setattr(interlock.demo, "_agent", None)
    schema = f"cli_{uuid.uuid4().hex[:10]}"
    data = tmp_path / "demo"
    prepare(data)
    agent = build_agent(data, checkpointer=PostgresCheckpointer(PG_DSN, schema=schema))
    try:
        assert all(r.interrupted for r in queue_runs(agent))
    finally:
        agent.close()
    try:
        yield f"{PG_DSN}?options=-csearch_path%3D{schema}", data
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_cli_on_postgres(pg: tuple[str, Path]) -> None:
    url, data = pg
    runner = CliRunner()
    result = runner.invoke(main, ["threads", "--db", url, "--status", "interrupted"])
    assert result.exit_code == 0, result.output
    assert "cleanup-cancelled-orders" in result.output and "weekly-report" in result.output

    result = runner.invoke(
        main, ["review", "--agent", "interlock.demo:agent", "--db", url, "--reviewer", "pat",
               "--thread", "cleanup-cancelled-orders"],
        input="ay", env={"INTERLOCK_DEMO_DIR": str(data)})
    assert result.exit_code == 0, result.output
    assert "No more pending requests." in result.output
    assert sample_rows(data, "SELECT COUNT(*) FROM orders WHERE status = 'cancelled' AND "
                             "created_at < '2024-01-01'") == [(0,)]

    result = runner.invoke(main, ["show", "cleanup-cancelled-orders", "--db", url])
    assert result.exit_code == 0 and "completed" in result.output

    result = runner.invoke(main, ["cancel", "weekly-report", "--db", url, "--reviewer", "pat"])
    assert result.exit_code == 0, result.output

    result = runner.invoke(main, ["audit", "--db", url, "--json"])
    assert result.exit_code == 0
    assert '"actor": "pat"' in result.stdout
    result = runner.invoke(main, ["audit", "verify", "--db", url])
    assert result.exit_code == 0, result.output
    assert "audit log intact" in result.output

    result = runner.invoke(main, ["show", "nope", "--db", url])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: Thread 'nope' does not exist")


@pytest.mark.parametrize("command", [["threads"], ["audit", "verify"], ["outbox"],
                                     ["show", "t1"]])
def test_a_schema_without_interlock_tables_is_an_error_and_stays_absent(
        command: list[str]) -> None:
    """A mistyped ``?schema=`` is not taken for an empty store: the command fails, says what
    to check, and creates nothing (a green "audit log intact" on a store just made would
    hide the typo)."""
    require_postgres()
    import psycopg

    schema = f"cli_typo_{uuid.uuid4().hex[:8]}"
    result = CliRunner().invoke(main, [*command, "--db", f"{PG_DSN}?schema={schema}"])
    assert result.exit_code == 1, result.output
    assert f"the schema '{schema}' holds no interlock tables" in result.stderr
    assert "interlock migrate" in result.stderr and "Traceback" not in result.output
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM information_schema.schemata WHERE "
                            "schema_name = %s", [schema]).fetchone() == (0,)

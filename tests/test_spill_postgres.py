"""A result that could not be stored in Postgres outlives its process when the store has a
``spill_dir`` (invariant 2: a known outcome is never turned into "unknown").

A real child process runs the approved tool against a private Postgres; the server is stopped
while the tool runs, so its result cannot be stored; the child then dies. The server comes
back and this process recovers the thread: with ``spill_dir``, the tool ran once, its result
is the one stored and nobody is asked; without it (the control), the outcome is unknown and a
reviewer is asked, as before. The spill folder is named by the database's store id, so a
folder given to two databases keeps their results apart."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interlock import Agent, tool
from interlock.errors import ConfigurationError
from test_spill import charging

TESTS = Path(__file__).parent

pytestmark = pytest.mark.postgres


def make_agent(dsn: str, spill: str | None, work: Path) -> Agent:
    """An agent whose model asks for ``charge(amount=7)`` (call ``c1``, under review) and
    answers with its result; the tool records each run in ``work/ran`` and, in the child,
    waits until the test has stopped the database."""
    from interlock import PostgresCheckpointer

    @tool
    def charge(amount: int) -> str:
        """Charge an amount."""
        with open(work / "ran", "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
        if os.environ.get("SPILL_PG_WAIT"):
            (work / "started").touch()
            deadline = time.monotonic() + 60
            while not (work / "stopped").exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        return f"charged {amount}"

    return charging(charge, PostgresCheckpointer(dsn, timeout=3, connect_timeout=2,
                                                 spill_dir=spill))


CHILD = """
import os, sys
from pathlib import Path
from test_spill_postgres import make_agent
from interlock import StorageError
agent = make_agent(sys.argv[1], sys.argv[2] or None, Path(sys.argv[3]))
try:
    agent.resume("t", [{"type": "approve"}])
    print("stored", flush=True)
except StorageError as exc:
    print("refused:", exc, flush=True)
os._exit(0)
"""


def _runs(work: Path) -> list[str]:
    path = work / "ran"
    return path.read_text().split() if path.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize("spill", [True, False], ids=["spill_dir", "no-spill_dir"])
def test_a_result_kept_by_a_process_that_died_while_postgres_was_down(
        tmp_path: Path, spill: bool) -> None:
    from conftest import require_postgres
    from private_pg import PrivatePostgres

    require_postgres()
    pg = PrivatePostgres()
    work, folder = tmp_path / "work", tmp_path / "spill"
    work.mkdir()
    where = str(folder) if spill else ""
    try:
        agent = make_agent(pg.dsn, where or None, work)
        assert agent.invoke("charge", thread_id="t").interrupted
        agent.close()
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, pg.dsn, where, str(work)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
            env={**os.environ, "SPILL_PG_WAIT": "1",
                 "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])})
        deadline = time.monotonic() + 60
        while not (work / "started").exists():
            assert child.poll() is None and time.monotonic() < deadline, child.communicate()
            time.sleep(0.02)
        pg.stop()  # the tool is running: its result has nowhere to go
        (work / "stopped").touch()
        out, err = child.communicate(timeout=120)
        assert "refused:" in out, out + err
        assert _runs(work) and len(_runs(work)) == 1
        spilled = sorted(folder.glob("*/*.json"))
        assert bool(spilled) == spill, spilled
        pg.start()

        later = make_agent(pg.dsn, where or None, work)  # what a new process does
        [result] = later.recover_stale()
        kinds = [r.kind for r in later.audit("t")]
        assert len(_runs(work)) == 1  # never run again
        if spill:
            assert result.status == "completed" and result.output == "done: charged 7"
            assert "outcome_unknown" not in kinds
            assert [m.content for m in later.get_thread("t").messages
                    if m.role == "tool"] == ["charged 7"]
            assert sorted(folder.glob("*/*.json")) == []  # stored: the file is gone
            assert spilled[0].parent == later.checkpointer.spill_dir  # type: ignore[attr-defined]
        else:  # the control: the result died with the process
            assert result.status == "interrupted"
            [request] = result.interrupts[0].value.action_requests
            assert request.reason == "outcome_unknown"
        later.close()
    finally:
        pg.remove()


def test_each_database_has_its_own_spill_folder(tmp_path: Path) -> None:
    """Two schemas (two stores) given one ``spill_dir`` get two folders; a second store
    object on the same schema, reached by another spelling of the URL, gets the same one."""
    import psycopg

    from conftest import require_postgres
    from interlock import PostgresCheckpointer

    dsn = require_postgres()
    schemas = [f"spill_{os.getpid()}_{i}" for i in range(2)]
    try:
        folders = []
        for schema in schemas:
            store = PostgresCheckpointer(dsn, schema=schema, spill_dir=tmp_path)
            assert store.spill_dir is None  # not known before the first connection
            store.schema_version()
            assert store.spill_dir is not None and store.spill_dir.parent == tmp_path
            folders.append(store.spill_dir)
            asyncio.run(store.close())
        assert folders[0] != folders[1]
        again = PostgresCheckpointer(
            f"{dsn}?schema={schemas[0]}&application_name=other&spill_dir={tmp_path}")
        again.schema_version()
        assert again.spill_dir == folders[0]
        asyncio.run(again.close())
        plain = PostgresCheckpointer(dsn, schema=schemas[0])
        plain.schema_version()
        assert plain.spill_dir is None
        asyncio.run(plain.close())
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for schema in schemas:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_spill_dir_is_refused(value: str) -> None:
    from interlock import PostgresCheckpointer

    with pytest.raises(ConfigurationError, match="spill_dir"):
        PostgresCheckpointer("postgresql://postgres@127.0.0.1:5432/test", spill_dir=value)

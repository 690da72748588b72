"""The demo's operations agent: SQL, e-mail, data lookups and questions for the user.

Policy (what pauses for a person):

* ``execute_sql`` — statements that only read (as SQLite itself classifies them) run at once;
  anything else waits for a DBA (approve or reject only, never remembered; the description says
  how many rows it would touch) and is rejected if nobody decides within an hour;
* ``send_email`` — every outgoing e-mail waits (approve, edit or reject);
* ``ask_user`` — a question for the user, answered with ``respond``;
* ``read_data`` — never pauses.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from ..agent import Agent
from ..hitl import HumanInTheLoop, InterruptOn
from ..messages import ToolCall
from ..middleware import ModelTurn
from ..models.base import Model
from ..models.scripted import ScriptedModel
from ..storage.base import Checkpointer
from ..storage.sqlite import SqliteCheckpointer
from ..tools import Tool, ToolContext, tool
from .model import ops_model

SYSTEM_PROMPT = """\
You are the operations assistant of a small online shop. You work on its SQLite database:
  customers(id, name, email, country, tier, credit_cents, created_at)
  orders(id, customer_id, status, total_cents, created_at, shipped_at)
      status is one of pending, shipped, delivered, cancelled, refunded
  outbox(id, to_addr, subject, body, created_at)   -- e-mails you send land here
Use execute_sql for queries and changes (look before you change anything), read_data to look
at rows, send_email to write to customers or colleagues, and ask_user when you need a decision
only the user can make. Changes to data and e-mails are reviewed by a person before they run;
if a reviewer rejects a call, do not retry it — explain what you did not do."""

SQL_APPROVAL_DEADLINE = timedelta(hours=1)
MAX_ROWS = 50

_READ_ACTIONS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),
}
_WRITE_OPCODES = {"OpenWrite", "Vacuum", "VCreate", "VDestroy", "VUpdate", "ParseSchema",
                  "SetCookie", "CreateBtree", "Destroy", "Clear", "DropTable", "DropIndex",
                  "DropTrigger", "IntegrityCk", "Expire", "JournalMode", "IncrVacuum"}


@contextmanager
def _connect(path: Path, *, read_only: bool = False) -> Iterator[sqlite3.Connection]:
    if read_only:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    else:
        conn = sqlite3.connect(path, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        yield conn
    finally:
        conn.close()


def is_read_only(db: Path, query: str) -> bool:
    """True only if SQLite itself says ``query`` is one statement that reads and writes nothing.

    The statement is compiled (``EXPLAIN``, never run) on a read-only connection. SQLite's
    authorizer must report it as a ``SELECT`` that only reads tables and calls functions, and
    its bytecode must open no table for writing and start no write transaction. Statements the
    authorizer never sees (``VACUUM``, ``VACUUM INTO``, ``REINDEX``) therefore do not count as
    reads. Anything unclear — several statements, a syntax error, a PRAGMA — counts as a change
    (fail closed).
    """
    if not db.exists():
        return False
    actions: list[int] = []

    def authorizer(action: int, *_: object) -> int:
        actions.append(action)
        return sqlite3.SQLITE_OK

    try:
        with _connect(db, read_only=True) as conn:
            conn.set_authorizer(authorizer)
            program = conn.execute("EXPLAIN " + query).fetchall()
    except (sqlite3.Error, ValueError):
        return False
    if not actions or actions[0] != sqlite3.SQLITE_SELECT:
        return False
    if any(a not in _READ_ACTIONS for a in actions):
        return False
    for row in program:
        opcode, p2 = row[1], row[3]
        if opcode in _WRITE_OPCODES or (opcode == "Transaction" and p2 != 0):
            return False
    return True


_DELETE = re.compile(r"^\s*DELETE\s+FROM\s+(\w+)(?:\s+WHERE\s+(.+?))?\s*;?\s*$",
                     re.IGNORECASE | re.DOTALL)
_UPDATE = re.compile(r"^\s*UPDATE\s+(\w+)\s+SET\s+.+?(?:\s+WHERE\s+(.+?))?\s*;?\s*$",
                     re.IGNORECASE | re.DOTALL)


def estimate_impact(db: Path, query: str) -> str | None:
    """"would delete 37 of 412 rows in orders" for a simple DELETE / UPDATE, else None."""
    for pattern, verb in ((_DELETE, "delete"), (_UPDATE, "change")):
        m = pattern.match(query)
        if m is None:
            continue
        table, where = m.group(1), m.group(2)
        try:
            with _connect(db, read_only=True) as conn:
                total = conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
                hit = conn.execute(
                    f'SELECT COUNT(*) FROM "{table}"' + (f" WHERE {where}" if where else "")
                ).fetchone()[0]
        except sqlite3.Error:
            return None
        text = f"This statement would {verb} {hit} of {total} rows in `{table}`."
        if not where:
            text += " ⚠️ It has no WHERE clause: that is every row."
        return text
    return None


def _rows(cursor: sqlite3.Cursor) -> str:
    rows = cursor.fetchmany(MAX_ROWS + 1)
    out: dict[str, Any] = {"rows": [dict(r) for r in rows[:MAX_ROWS]]}
    if len(rows) > MAX_ROWS:
        out["truncated"] = f"only the first {MAX_ROWS} rows are shown"
    return json.dumps(out, ensure_ascii=False)


def make_tools(sample_db: Path) -> list[Tool]:
    """The four tools, bound to the sample database at ``sample_db``."""

    @tool
    def execute_sql(query: str) -> str:
        """Run one SQL statement against the shop database (SQLite). SELECT returns the rows as
        JSON; other statements return how many rows they changed."""
        with _connect(sample_db) as conn:
            cursor = conn.execute(query)
            if cursor.description is not None:
                return _rows(cursor)
            conn.commit()
            return f"{cursor.rowcount} row(s) affected."

    @tool(read_only=True)
    def read_data(
        table: Literal["customers", "orders", "outbox"], id: int | None = None, limit: int = 10
    ) -> str:
        """Read rows of a table: the row with the given id, or the first `limit` rows."""
        with _connect(sample_db, read_only=True) as conn:
            if id is not None:
                cursor = conn.execute(f"SELECT * FROM {table} WHERE id = ?", (id,))
            else:
                cursor = conn.execute(f"SELECT * FROM {table} ORDER BY id LIMIT ?",
                                      (max(1, min(limit, MAX_ROWS)),))
            return _rows(cursor)

    @tool
    def send_email(to: str, subject: str, body: str, ctx: ToolContext) -> str:
        """Send an e-mail (it is queued in the shop's outbox table)."""
        if "@" not in to:
            raise ValueError(f"{to!r} is not an e-mail address")
        with _connect(sample_db) as conn:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO outbox (to_addr, subject, body, created_at, "
                "idempotency_key) VALUES (?, ?, ?, ?, ?)",
                (to, subject, body, datetime.now(UTC).isoformat(" ", "seconds"),
                 ctx.idempotency_key),
            )
            conn.commit()
            row = conn.execute("SELECT id FROM outbox WHERE idempotency_key = ?",
                               (ctx.idempotency_key,)).fetchone()
        if cursor.rowcount == 0:
            return f"E-mail to {to} was already in the outbox (message #{row[0]}); not sent twice."
        return f"E-mail to {to} queued in the outbox (message #{row[0]})."

    @tool
    def ask_user(question: str) -> str:
        """Ask the user a question and wait for the answer."""
        return "Nobody answered the question."

    return [execute_sql, read_data, send_email, ask_user]


def make_policy(sample_db: Path) -> HumanInTheLoop:
    """Which calls pause, who may do what, and what the reviewer is told."""

    def sql_changes_data(call: ToolCall) -> bool:
        return not is_read_only(sample_db, str(call.args.get("query", "")))

    def describe_sql(call: ToolCall, turn: ModelTurn) -> str:
        query = str(call.args.get("query", ""))
        impact = estimate_impact(sample_db, query)
        text = "🚨 This SQL statement changes data: it runs only once a reviewer approves it."
        return f"{text}\n{impact}" if impact else text

    def describe_email(call: ToolCall, turn: ModelTurn) -> str:
        return (f"📧 Outgoing e-mail to {call.args.get('to', '?')}: check the recipient and the "
                f"wording before it is sent.")

    def describe_question(call: ToolCall, turn: ModelTurn) -> str:
        return f"❓ The agent asks you: {call.args.get('question', '')}"

    return HumanInTheLoop(
        interrupt_on={
            "execute_sql": InterruptOn(
                allowed_decisions=["approve", "reject"],
                description=describe_sql,
                when=sql_changes_data,
                expires_after=SQL_APPROVAL_DEADLINE,
                allow_remember=False,  # each change to the data is looked at on its own
            ),
            "send_email": InterruptOn(
                allowed_decisions=["approve", "edit", "reject"], description=describe_email
            ),
            "ask_user": InterruptOn(allowed_decisions=["respond"],
                                    description=describe_question),
            "read_data": False,
        },
        description_prefix="The ops agent wants to run a tool",
    )


def build_agent(
    data_dir: str | Path,
    *,
    model: Model | str | None = None,
    checkpointer: Checkpointer | None = None,
    **agent_kwargs: Any,
) -> Agent:
    """The demo agent on ``data_dir/sample.db``, storing threads in ``data_dir/interlock.db``.

    ``model``: a model object or ``"openai:NAME"`` / ``"anthropic:NAME"``; by default the
    scripted operations model, which needs no API key.
    """
    data = Path(data_dir)
    sample = data / "sample.db"
    return Agent(
        model=model if model is not None else ScriptedModel(ops_model, name="ops-demo"),
        tools=make_tools(sample),
        middleware=[make_policy(sample)],
        checkpointer=checkpointer or SqliteCheckpointer(data / "interlock.db"),
        system_prompt=SYSTEM_PROMPT,
        name="ops-demo",
        **agent_kwargs,
    )

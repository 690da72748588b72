"""Every `interlock` command through click's CliRunner, with its error paths.

Errors must be one line on stderr starting with ``error: ``; exit status 1 for errors, 2 for
usage mistakes.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import interlock.demo
from interlock import Agent, CallState, SqliteCheckpointer
from interlock.cli import main
from interlock.cli.review import ReviewSession
from interlock.demo import build_agent

from .helpers import child_env, cli_argv, db_url, demo_dir, sample_rows

DEMO_THREADS = ["cleanup-cancelled-orders", "goodwill-credit", "late-order-1042",
                "weekly-report"]


@pytest.fixture(autouse=True)
def _fresh_demo_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    # `interlock.demo:agent` is built once per process; each test points it elsewhere
    monkeypatch.setattr(interlock.demo, "_agent", None)
    for var in ("INTERLOCK_DB", "INTERLOCK_AGENT", "INTERLOCK_DEMO_DIR", "INTERLOCK_DEMO_MODEL",
                "EDITOR", "VISUAL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def _prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_dir(tmp_path_factory.mktemp("demo-template"))


@pytest.fixture
def data(_prepared: Path, tmp_path: Path) -> Path:
    """A private copy of a demo data dir whose four runs wait for a decision."""
    target = tmp_path / "demo"
    target.mkdir()
    for name in ("interlock.db", "sample.db"):
        src = sqlite3.connect(_prepared / name)
        dst = sqlite3.connect(target / name)
        src.backup(dst)
        src.close()
        dst.close()
    return target


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=False)


def assert_error(result: Result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.output


def store_agent(data: Path) -> Agent:
    return build_agent(data)


# ---------------------------------------------------------------------------- help, usage


def test_help_lists_every_command() -> None:
    result = run("--help")
    assert result.exit_code == 0
    for command in ("demo", "review", "threads", "show", "cancel", "audit", "serve"):
        assert f"  {command}" in result.output


@pytest.mark.parametrize("command", ["demo", "review", "threads", "show", "cancel", "audit"])
def test_each_command_has_help_with_an_example(command: str) -> None:
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Usage: interlock" in result.output or "Usage: main" in result.output
    assert "Example" in result.output


def test_version() -> None:
    result = run("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"interlock, version {interlock.__version__}"


def test_unknown_command_and_option_are_one_line_usage_errors(data: Path) -> None:
    assert_error(run("frobnicate"), 2, "No such command 'frobnicate'")
    assert_error(run("threads", "--db", db_url(data), "--bogus"), 2, "--bogus",
                 "interlock threads --help")
    assert_error(run("threads", "--db", db_url(data), "--status", "happy"), 2, "happy")
    assert_error(run("show"), 2, "THREAD")


# ---------------------------------------------------------------------------- --db / --agent


def test_no_store_given() -> None:
    assert_error(run("threads"), 2, "no thread store given", "--db")


def test_bad_db_urls(tmp_path: Path) -> None:
    assert_error(run("threads", "--db", "mysql://x/y"), 2, "Unknown database URL")
    missing = tmp_path / "missing.db"
    assert_error(run("threads", "--db", f"sqlite:///{missing}"), 1, "does not exist")
    assert not missing.exists()  # a typo does not create an empty database


def test_db_from_environment(data: Path) -> None:
    result = run("threads", env={"INTERLOCK_DB": db_url(data)})
    assert result.exit_code == 0
    for thread_id in DEMO_THREADS:
        assert thread_id in result.output


def test_agent_spec_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken_agents.py").write_text("not_an_agent = 42\n")
    assert_error(run("threads", "--agent", "interlock.demo"), 2, "MODULE:ATTR")
    assert_error(run("threads", "--agent", "no_such_module_xyz:agent"), 1, "cannot import")
    assert_error(run("threads", "--agent", "broken_agents:agent"), 1, "has no attribute")
    assert_error(run("threads", "--agent", "broken_agents:not_an_agent"), 1,
                 "is a int, not an interlock Agent")


def test_demo_agent_without_demo_data(tmp_path: Path) -> None:
    result = run("threads", "--agent", "interlock.demo:agent",
                 env={"INTERLOCK_DEMO_DIR": str(tmp_path / "none")})
    assert_error(result, 1, "no demo data", "interlock demo")


def test_agent_factory_and_its_store(data: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_agents.py").write_text(textwrap.dedent(f"""
        from interlock.demo import build_agent

        def make():
            return build_agent({str(data)!r})
    """))
    result = run("threads", "--agent", "my_agents:make", "--status", "interrupted")
    assert result.exit_code == 0, result.output
    for thread_id in DEMO_THREADS:
        assert thread_id in result.output


# ---------------------------------------------------------------------------- threads


def test_threads_table_filter_limit_and_json(data: Path) -> None:
    url = db_url(data)
    result = run("threads", "--db", url)
    assert result.exit_code == 0
    for thread_id in DEMO_THREADS:
        assert thread_id in result.output
    assert "send_email" in result.output and "ask_user" in result.output
    assert "4 thread(s) wait for a decision" in result.output

    result = run("threads", "--db", url, "--status", "completed")
    assert result.exit_code == 0
    assert result.output.strip() == "No threads with status 'completed'."

    rows = json.loads(run("threads", "--db", url, "--json", "--limit", "2").stdout)
    assert len(rows) == 2
    assert {r["status"] for r in rows} == {"interrupted"}

    rows = json.loads(run("threads", "--db", url, "--json").stdout)
    assert sorted(r["thread_id"] for r in rows) == DEMO_THREADS
    assert_error(run("threads", "--db", url, "--limit", "0"), 2, "--limit")


def test_threads_on_an_empty_store(tmp_path: Path) -> None:
    SqliteCheckpointer(tmp_path / "empty.db")  # lazily created: make the file exist
    (tmp_path / "empty.db").touch()
    result = run("threads", "--db", f"sqlite:///{tmp_path / 'empty.db'}")
    assert result.exit_code == 0
    assert result.output.strip() == "No threads in this store."


# ---------------------------------------------------------------------------- show


def test_show_thread(data: Path) -> None:
    result = run("show", "late-order-1042", "--db", db_url(data))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "late-order-1042" in out and "interrupted" in out
    assert "Order #1042 is late" in out  # the user's request
    assert "send_email" in out and "noah.weber@example.com" in out
    assert "allowed: approve, edit, reject" in out
    assert "tool calls" in out and "pending_review" in out


def test_show_json(data: Path) -> None:
    body = json.loads(run("show", "goodwill-credit", "--db", db_url(data), "--json").stdout)
    assert body["status"] == "interrupted"
    [intr] = body["interrupts"]
    assert intr["value"]["action_requests"][0]["name"] == "ask_user"
    assert [e["state"] for e in body["journal"]] == ["succeeded", "pending_review"]
    assert body["messages"][0]["content"].startswith("Customer Dana Whitfield")


def test_show_unknown_thread(data: Path) -> None:
    assert_error(run("show", "nope", "--db", db_url(data)), 1, "Thread 'nope' does not exist")


# ---------------------------------------------------------------------------- audit


def test_audit_listing_and_filter(data: Path) -> None:
    url = db_url(data)
    result = run("audit", "--db", url)
    assert result.exit_code == 0
    assert "request_raised" in result.output and "tool_finished" in result.output
    records = json.loads(run("audit", "--db", url, "--thread", "weekly-report",
                             "--json").stdout)
    assert records and {r["thread_id"] for r in records} == {"weekly-report"}
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    last = json.loads(run("audit", "--db", url, "--json", "--limit", "3").stdout)
    assert len(last) == 3
    assert "showing the last 3 of" in run("audit", "--db", url, "--limit", "3").output


def test_audit_errors(data: Path) -> None:
    assert_error(run("audit", "--db", db_url(data), "--thread", "nope"), 1, "'nope'")
    assert_error(run("audit", "check", "--db", db_url(data)), 2, "'check'")


def test_audit_verify_detects_tampering(data: Path) -> None:
    url = db_url(data)
    result = run("audit", "verify", "--db", url)
    assert result.exit_code == 0, result.output
    assert "audit log intact" in result.output

    conn = sqlite3.connect(data / "interlock.db")
    row_id, raw = conn.execute(
        "SELECT id, data FROM interlock_audit WHERE thread_id = 'cleanup-cancelled-orders' "
        "ORDER BY seq LIMIT 1").fetchone()
    record = json.loads(raw)
    record["actor"] = "mallory"
    conn.execute("UPDATE interlock_audit SET data = ? WHERE id = ?",
                 (json.dumps(record), row_id))
    conn.commit()
    conn.close()

    result = run("audit", "verify", "--db", url)
    assert result.exit_code == 1
    assert "cleanup-cancelled-orders" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        "error: audit log verification failed: 1 problem(s)")
    # other threads are still intact
    assert run("audit", "verify", "--db", url, "--thread", "weekly-report").exit_code == 0


# ---------------------------------------------------------------------------- cancel


def test_cancel_closes_pending_calls(data: Path) -> None:
    url = db_url(data)
    result = run("cancel", "late-order-1042", "--db", url, "--reason", "handled by phone",
                 "--reviewer", "bob")
    assert result.exit_code == 0, result.output
    assert "1 open call(s) closed" in result.output

    agent = store_agent(data)
    try:
        state = agent.get_thread("late-order-1042")
        assert state.status == "idle" and state.interrupts == []
        email = [e for e in agent.journal("late-order-1042") if e.name == "send_email"]
        assert [e.state for e in email] == [CallState.CANCELLED]
        [row] = [r for r in agent.audit("late-order-1042") if r.kind == "cancelled"]
        assert row.actor == "bob" and row.data["reason"] == "handled by phone"
    finally:
        agent.close()
    assert sample_rows(data, "SELECT COUNT(*) FROM outbox") == [(0,)]

    # CLI messages name commands, not Python calls
    again = run("cancel", "late-order-1042", "--db", url, "--reviewer", "bob")
    assert_error(again, 1, "has no pending interrupt",
                 "See its state with `interlock show late-order-1042`")
    missing = run("cancel", "nope", "--db", url, "--reviewer", "bob")
    assert_error(missing, 1, "Thread 'nope' does not exist", "`interlock threads`")
    for result in (again, missing):
        assert "agent." not in result.stderr and "invoke" not in result.stderr


def test_cancel_and_review_need_an_explicit_reviewer(data: Path) -> None:
    url = db_url(data)
    for argv in (("cancel", "late-order-1042", "--db", url),
                 ("review", "--agent", "interlock.demo:agent")):
        result = run(*argv, env={"INTERLOCK_DEMO_DIR": str(data), "USER": "root"})
        assert_error(result, 2, "records who decides", "--reviewer NAME",
                     "INTERLOCK_REVIEWER=NAME")
    agent = store_agent(data)
    try:
        assert agent.get_thread("late-order-1042").status == "interrupted"  # nothing happened
    finally:
        agent.close()
    # the environment variable names the reviewer too
    result = run("cancel", "late-order-1042", "--db", url,
                 env={"INTERLOCK_REVIEWER": "dora"})
    assert result.exit_code == 0, result.output
    agent = store_agent(data)
    try:
        [row] = [r for r in agent.audit("late-order-1042") if r.kind == "cancelled"]
        assert row.actor == "dora"
    finally:
        agent.close()


# ---------------------------------------------------------------------------- review


def test_review_needs_the_agent(data: Path) -> None:
    assert_error(run("review", "--db", db_url(data)), 2, "needs the agent", "--agent")


def test_review_unknown_thread(data: Path) -> None:
    assert_error(run("review", "--agent", "interlock.demo:agent", "--thread", "nope",
                     "--reviewer", "carol",
                     env={"INTERLOCK_DEMO_DIR": str(data)}), 1, "Thread 'nope'")


def _review(data: Path, keys: str, *extra: str) -> Result:
    return run("review", "--agent", "interlock.demo:agent", "--reviewer", "carol", *extra,
               input=keys, env={"INTERLOCK_DEMO_DIR": str(data)})


def test_review_with_only_some_threads_and_skip_and_quit(data: Path) -> None:
    # invalid key, then skip the DELETE; nothing else in this selection (the demo never
    # remembers SQL changes, so "m" is not offered)
    result = _review(data, "xs", "--thread", "cleanup-cancelled-orders")
    assert result.exit_code == 0, result.output
    assert "press one of: a, r, v, s, q" in result.output
    assert "skipped" in result.output
    assert "No more pending requests." in result.output
    assert "Session: 1 skipped." in result.output
    # quit at the first request: nothing decided
    result = _review(data, "q")
    assert result.exit_code == 0
    assert "cleanup-cancelled-orders" in result.output
    agent = store_agent(data)
    try:
        assert len(agent.list_threads(status="interrupted")) == 4
        assert not [r for r in agent.audit() if r.kind == "decision"]
    finally:
        agent.close()


def test_review_decides_in_order_and_the_runs_continue(data: Path) -> None:
    keys = ("ay"                                 # DELETE: approve, yes (it changes data)
            "r" "not this week\n"                # the apology e-mail: reject with a reason
            "p" "\n"                             # respond with nothing: not decided
            "p" "20\n"                           # credit question: respond
            "ay"                                 # the UPDATE that follows: approve, yes
            "my")                                # weekly report: approve and remember, yes
    result = _review(data, keys, "--thread", "cleanup-cancelled-orders", "--thread",
                     "late-order-1042", "--thread", "goodwill-credit", "--thread",
                     "weekly-report")
    assert result.exit_code == 0, result.output
    assert "an answer is required; nothing was decided" in result.output
    assert "No more pending requests." in result.output
    agent = store_agent(data)
    try:
        for thread_id in DEMO_THREADS:
            assert agent.get_thread(thread_id).status == "completed", thread_id
        decisions = [(r.thread_id, r.data["type"], r.actor) for r in agent.audit()
                     if r.kind == "decision"]
        assert sorted(decisions) == sorted([
            ("cleanup-cancelled-orders", "approve", "carol"),
            ("late-order-1042", "reject", "carol"),
            ("goodwill-credit", "respond", "carol"),
            ("goodwill-credit", "approve", "carol"),
            ("weekly-report", "approve", "carol"),
        ])
        auto = [r for r in agent.audit("weekly-report") if r.kind == "auto_approved"]
        assert [r.actor for r in auto] == ["rule:remember:thread:send_email"]
    finally:
        agent.close()
    assert sample_rows(data, "SELECT credit_cents FROM customers WHERE id = 17") == [(2500,)]
    assert sorted(sample_rows(data, "SELECT to_addr FROM outbox")) == [
        ("finance@example.com",), ("ops@example.com",)]


def test_review_when_someone_else_decides_first(data: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Another reviewer answers the request while it is on screen: the terminal reviewer's
    key press is not applied twice; the session moves on."""
    other = store_agent(data)
    original = ReviewSession.show
    raced: list[str] = []

    def show_and_race(self: ReviewSession, item: Any) -> None:
        original(self, item)
        if not raced:
            raced.append(item.thread_id)
            other.resume(item.thread_id, [{"type": "reject", "message": "mine"}],
                         interrupt_id=item.interrupt.id, reviewer="dave")

    monkeypatch.setattr(ReviewSession, "show", show_and_race)
    try:
        result = _review(data, "a" "y" "q", "--thread", "cleanup-cancelled-orders")
    finally:
        other.close()
    assert result.exit_code == 0, result.output
    # who decided, what, and their words; nothing of this reviewer's was sent
    assert "dave already rejected this call" in result.output
    assert "(mine); nothing was sent" in " ".join(result.output.split())
    agent = store_agent(data)
    try:
        decisions = [(r.data["type"], r.actor) for r in agent.audit("cleanup-cancelled-orders")
                     if r.kind == "decision"]
        assert decisions == [("reject", "dave")]
    finally:
        agent.close()
    assert sample_rows(data, "SELECT COUNT(*) FROM orders")[0][0] == 400  # nothing deleted


def test_review_nothing_pending(data: Path) -> None:
    run("cancel", "cleanup-cancelled-orders", "--db", db_url(data), "--reviewer", "carol")
    result = _review(data, "", "--thread", "cleanup-cancelled-orders")
    assert result.exit_code == 0
    assert "Nothing to review: no request is waiting for a decision (thread " \
        "cleanup-cancelled-orders)." in " ".join(result.output.split())


def test_review_role_limited_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request limited to the `dba` role: a reviewer without it is told and the request is
    skipped; with --role dba the decision goes through."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dba_agent.py").write_text(textwrap.dedent(f"""
        from interlock import Agent, HumanInTheLoop, InterruptOn, ScriptedModel, tool
        from interlock import SqliteCheckpointer

        RAN = []

        @tool
        def drop_table(name: str) -> str:
            '''Drop a table.'''
            RAN.append(name)
            return "dropped " + name

        def make():
            return Agent(
                model=ScriptedModel([{{"name": "drop_table", "args": {{"name": "logs"}}}},
                                     "done"]),
                tools=[drop_table],
                middleware=[HumanInTheLoop(interrupt_on={{
                    "drop_table": InterruptOn(allowed_decisions=["approve", "reject"],
                                              reviewers=["dba"])}})],
                checkpointer=SqliteCheckpointer({str(tmp_path / "dba.db")!r}),
            )
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import dba_agent  # type: ignore[import-not-found]

    seed = dba_agent.make()
    assert seed.invoke("clean up", thread_id="t1").interrupted
    seed.close()
    result = run("review", "--agent", "dba_agent:make", "--reviewer", "erin", input="ay")
    assert result.exit_code == 0, result.output
    assert "needs one of the roles: dba" in result.output
    assert dba_agent.RAN == []
    result = run("review", "--agent", "dba_agent:make", "--reviewer", "frank", "--role", "dba",
                 input="ay")
    assert result.exit_code == 0, result.output
    assert "thread t1 completed: done" in " ".join(result.output.split())
    assert dba_agent.RAN == ["logs"]


# ---------------------------------------------------------------------------- demo


def test_demo_usage_errors() -> None:
    assert_error(run("demo", "--port", "70000"), 2, "70000")
    assert_error(run("demo", "--model"), 2, "--model")


def test_demo_with_an_unknown_model_provider(tmp_path: Path) -> None:
    result = run("demo", "--no-browser", "--port", "0", "--data-dir", str(tmp_path / "d"),
                 "--model", "acme:big")
    assert_error(result, 1, "unknown provider 'acme'")


def test_demo_on_a_directory_it_cannot_make_says_so_in_one_line(tmp_path: Path) -> None:
    in_the_way = tmp_path / "afile"
    in_the_way.write_text("")
    assert_error(run("demo", "--no-browser", "--port", "0", "--data-dir",
                     str(in_the_way / "sub")), 1, "cannot be created", "--data-dir DIR")
    assert_error(run("demo", "--no-browser", "--port", "0",
                     env={"INTERLOCK_DEMO_DIR": str(in_the_way)}), 1,
                 "is a file, not a directory", "--data-dir DIR")


def test_python_advice_in_a_message_becomes_the_command(tmp_path: Path) -> None:
    """A model that cannot be reached: the message names `interlock recover`, not the
    Python method."""
    result = run("demo", "--no-browser", "--port", "0", "--data-dir", str(tmp_path / "d"),
                 "--model", "openai:gpt-4.1-mini",
                 env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert_error(result, 1, "openai error", "`interlock recover THREAD`")
    assert "agent.recover" not in result.output


def test_an_audit_head_that_is_not_one_is_named(tmp_path: Path, data: Path) -> None:
    db = f"sqlite:///{data / 'interlock.db'}"
    empty, other = tmp_path / "empty.json", tmp_path / "other.json"
    empty.write_text("")
    other.write_text('{"format": "something else"}')
    assert_error(run("audit", "verify", "--db", db, "--head", str(empty)), 1,
                 "is not an exported audit head (the file is empty)", "export-head")
    assert_error(run("audit", "verify", "--db", db, "--head", str(other)), 1,
                 "is not an exported audit head", "export-head")
    assert_error(run("audit", "verify", "--db", db, "--head", str(tmp_path / "none.json")),
                 1, "cannot read the exported head", "No such file")


def test_serve_is_registered() -> None:
    result = run("serve", "--help")
    assert result.exit_code == 0
    assert "MODULE:AGENT" in result.output


def test_review_edit_cancelled_or_unchanged_decides_nothing(data: Path, tmp_path: Path) -> None:
    editor = tmp_path / "editor.py"
    editor.write_text(textwrap.dedent("""
        import pathlib, sys
        counter = pathlib.Path(sys.argv[1])
        n = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(n + 1))
        if n == 0:
            pathlib.Path(sys.argv[2]).write_text("// only a comment\\n")  # empty: cancel
        # n == 1: saved as it was
    """))
    result = run("review", "--agent", "interlock.demo:agent", "--thread", "late-order-1042",
                 "--reviewer", "carol", input="v" "e" "e" "q",
                 env={"INTERLOCK_DEMO_DIR": str(data),
                      "EDITOR": f"{sys.executable} {editor} {tmp_path / 'n'}"})
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "conversation" in out and "Let me look up order #1042 first." in out  # [v]
    assert "edit cancelled (empty file); nothing was decided" in out
    assert "the arguments are unchanged; nothing was decided" in out
    assert (tmp_path / "n").read_text() == "2"
    agent = store_agent(data)
    try:
        assert agent.get_thread("late-order-1042").status == "interrupted"
        assert not [r for r in agent.audit("late-order-1042") if r.kind == "decision"]
    finally:
        agent.close()


def test_review_answers_an_interrupt_question(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "colour_agent.py").write_text(textwrap.dedent(f"""
        from interlock import Agent, ScriptedModel, SqliteCheckpointer, interrupt, tool

        @tool
        def paint(wall: str) -> str:
            '''Paint a wall.'''
            answer = interrupt({{"question": "Which colour for the " + wall + "?"}})
            return "painted the " + wall + " " + str(answer["colour"])

        def make():
            return Agent(model=ScriptedModel([{{"name": "paint", "args": {{"wall": "hall"}}}},
                                              "all done"]),
                         tools=[paint],
                         checkpointer=SqliteCheckpointer({str(tmp_path / "c.db")!r}))
    """))
    import colour_agent  # type: ignore[import-not-found]

    seed = colour_agent.make()
    assert seed.invoke("paint the hall", thread_id="p1").interrupted
    seed.close()
    result = run("review", "--agent", "colour_agent:make", "--reviewer", "gus",
                 input='p{"colour": "teal"}\n')
    assert result.exit_code == 0, result.output
    assert "Which colour for the hall?" in result.output
    assert "[p] respond" in result.output and "[a] approve" not in result.output
    check = colour_agent.make()
    try:
        state = check.get_thread("p1")
        assert state.status == "completed"
        assert any(getattr(m, "content", "") == "painted the hall teal" for m in state.messages)
        [answer] = [r for r in check.audit("p1") if r.kind == "input_answered"]
        assert answer.actor == "gus" and answer.data["value"] == {"colour": "teal"}
    finally:
        check.close()


def test_review_without_a_terminal(data: Path) -> None:
    """No controlling terminal to read keys from: one error line, exit 1."""
    proc = subprocess.run(cli_argv("review", "--agent", "interlock.demo:agent",
                                   "--reviewer", "carol"),
                          env=child_env(INTERLOCK_DEMO_DIR=str(data)), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60, start_new_session=True)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        line for line in proc.stderr.strip().splitlines() if line.startswith("error: ")]
    assert "reads single keys from a terminal" in proc.stderr


def test_unreachable_postgres_is_one_error_line() -> None:
    result = run("threads", "--db", "postgresql://nobody@127.0.0.1:1/x")
    assert_error(result, 1, "Cannot connect to Postgres")

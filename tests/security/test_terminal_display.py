"""ESC sequences and other control characters that a model or a reviewer wrote are shown as
visible escapes by every terminal command: `interlock review`, `show`, `audit` and `threads`
run in tmux, and what tmux shows on its screen is checked. Printed raw, the argument below would
erase itself and leave "SELECT 1 -- harmless" on the screen, and the reject message would move
the cursor up and overwrite an earlier line of the audit listing."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.helpers import SRC, child_env
from interlock import SqliteCheckpointer
from server.server_agents import make_agent

SERVER_TESTS = Path(__file__).resolve().parents[1] / "server"

ARG = "DROP TABLE users;\x1b[2K\x1b[1GSELECT 1 -- harmless"
REJECT = "fine\x1b[3A\x1b[2K\x1b[1Gforged: every call approved by admin\x1b[0J"
BIDI = "SELECT * FROM t WHERE id = 1 \u2067OR 1=1 --\u2069"
ESC = "⟨U+001B⟩"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "display.db"
    agent = make_agent(SqliteCheckpointer(path))
    try:
        assert agent.invoke(f"sql {ARG}", thread_id="esc-arg").interrupted
        assert agent.invoke(f"sql {BIDI}", thread_id="bidi-arg").interrupted
        first = agent.invoke("sql SELECT 2", thread_id="esc-reject")
        assert first.interrupted
        done = agent.resume("esc-reject", [{"type": "reject", "message": REJECT}],
                            reviewer="bob")
        assert done.status == "completed"
    finally:
        agent.close()
    yield path


class Tmux:
    """A private tmux server (its own socket) running one command in a 200x50 window."""

    def __init__(self, tmp: Path) -> None:
        self.socket = f"interlock-display-{uuid.uuid4().hex[:8]}"
        self.tmp = tmp

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True,
                              capture_output=True, text=True, timeout=30).stdout

    def start(self, *cli: str) -> None:
        env = child_env(COLUMNS="200", LINES="50", TERM="xterm-256color",
                        PYTHONPATH=f"{SRC}:{SERVER_TESTS}")
        script = self.tmp / f"run-{uuid.uuid4().hex[:6]}.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items()
                          if k.isidentifier())
        argv = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "interlock.cli", *cli])
        script.write_text(f"{exports}{argv}\necho __EXIT__ $?\nsleep 60\n")
        self.session = script.stem
        self.tmux("new-session", "-d", "-s", self.session, "-x", "200", "-y", "50", "bash",
                  str(script))

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-500", "-t", self.session)

    def wait_for(self, text: str, within: float = 40) -> str:
        deadline = time.monotonic() + within
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared on the screen:\n{screen}")
            time.sleep(0.2)

    def run(self, *cli: str) -> str:
        self.start(*cli)
        screen = self.wait_for("__EXIT__")
        assert "__EXIT__ 0" in screen, screen
        return screen

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       timeout=30)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(tmp_path)
    yield t
    t.close()


def url(db: Path) -> str:
    return f"sqlite:///{db}"


def assert_argument_visible(screen: str) -> None:
    assert f"DROP TABLE users;{ESC}[2K{ESC}[1GSELECT 1 -- harmless" in screen, screen
    lines = [line.strip() for line in screen.splitlines()]
    assert not any(line.startswith("SELECT 1 -- harmless") for line in lines), screen


def test_show_prints_escapes_visibly(db: Path, tmux: Tmux) -> None:
    screen = tmux.run("show", "esc-arg", "--db", url(db))
    assert_argument_visible(screen)
    assert "Hidden characters, shown as ⟨U+…⟩: 2 control characters (U+001B)" in screen
    screen = tmux.run("show", "bidi-arg", "--db", url(db))
    assert "id = 1 ⟨U+2067⟩OR 1=1 --⟨U+2069⟩" in screen
    # the argument's two, counted once: the default description's copy of the arguments is
    # not shown (the arguments are, right below)
    assert "2 bidi controls (U+2067, U+2069)" in screen


def test_audit_listing_cannot_be_rewritten_by_a_message(db: Path, tmux: Tmux) -> None:
    screen = tmux.run("audit", "--db", url(db))
    assert f"reject execute_sql: fine{ESC}[3A{ESC}[2K{ESC}[1Gforged: every call approved " \
           f"by admin{ESC}[0J" in screen, screen
    # every row written before the message is still on the screen, in order
    kinds = [k for line in screen.splitlines() for k in line.split()
             if k in ("request_raised", "decision", "tool_finished")]
    assert kinds.count("request_raised") == 3 and kinds.count("decision") == 1, screen
    assert not any(line.lstrip().startswith("forged") for line in screen.splitlines())


def test_threads_lists_escapes_visibly(db: Path, tmux: Tmux) -> None:
    screen = tmux.run("threads", "--db", url(db))
    assert f"sql DROP TABLE users;{ESC}[2K{ESC}[1GSELECT 1" in screen, screen
    assert "⟨U+2067⟩OR 1=1 --⟨U+2069⟩" in screen


def test_review_shows_the_request_with_escapes_and_a_warning(db: Path, tmux: Tmux) -> None:
    tmux.start("review", "--agent", "server_agents:make_agent", "--db", url(db),
               "--thread", "esc-arg", "--reviewer", "alice")
    screen = tmux.wait_for("[q] quit")
    assert_argument_visible(screen)
    assert "⚠ Hidden characters, shown as ⟨U+…⟩: 2 control characters (U+001B)" in screen
    tmux.tmux("send-keys", "q")
    screen = tmux.wait_for("__EXIT__")
    assert "__EXIT__ 0" in screen


def test_json_output_and_error_lines_carry_no_raw_control_characters(db: Path) -> None:
    env = child_env(PYTHONPATH=str(SRC))
    out = subprocess.run([sys.executable, "-m", "interlock.cli", "show", "esc-arg", "--json",
                          "--db", url(db)], env=env, capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert b"\x1b" not in out.stdout and b"\\u001b[2K" in out.stdout
    # the error line names the database path as given
    err = subprocess.run([sys.executable, "-m", "interlock.cli", "show", "esc-arg", "--db",
                          f"sqlite:///{db.parent}/no\x1b[2Jsuch\u202e.db"], env=env,
                         capture_output=True, timeout=60)
    assert err.returncode == 1
    assert b"\x1b" not in err.stderr and "⟨U+001B⟩[2J".encode() in err.stderr, err.stderr
    assert "⟨U+202E⟩".encode() in err.stderr

"""A word longer than the terminal is shown whole, in `interlock review` and `interlock show`.

A model proposes ``curl https://docs.example.com/install/aaaa…;rm${IFS}-rf${IFS}~`` as one
word of 200+ characters. In an 80-column terminal a table cell used to cut it with a bare
``…`` (no "+N chars", no warning), so the reviewer approved a command whose dangerous end was
never on screen. Every character of the word must be on screen, folded over several lines.

Invariant 1: nothing a reviewer did not see can run on their approval."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pexpect

from .helpers import child_env, cli_argv

WORD = ("https://docs.example.com/install/" + "a" * 180 + ";rm${IFS}-rf${IFS}~")

AGENT = textwrap.dedent("""
    import json, os, pathlib
    from interlock import Agent, HumanInTheLoop, ScriptedModel, SqliteCheckpointer, tool

    RUNS = pathlib.Path(os.environ["WORD_RUNS"])

    @tool
    def shell(cmd: str, options: dict) -> str:
        \"\"\"Run a shell command.\"\"\"
        with RUNS.open("a") as f:
            f.write(json.dumps(cmd) + "\\n")
        return "ran"

    def reply(messages):
        if messages[-1].role == "user":
            word = os.environ["WORD"]
            return {"name": "shell", "args": {"cmd": "curl -fsS " + word,
                                              "options": {"mirror": {"url": word}}}}
        return "done"

    agent = Agent(model=ScriptedModel(reply), tools=[shell],
                  middleware=[HumanInTheLoop(interrupt_on={"shell": True})],
                  checkpointer=SqliteCheckpointer(os.environ["WORD_DB"]))
""")

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def joined(screen: str) -> str:
    """The screen's lines without box borders and padding, run together: a word folded over
    several lines reads whole again."""
    lines = ANSI.sub("", screen).replace("\r", "").split("\n")
    return "".join(line.strip().strip("│").strip() for line in lines)


def setup(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "word_agent.py").write_text(AGENT)
    env = child_env(PYTHONPATH=f"{tmp_path}:{child_env()['PYTHONPATH']}", TERM="dumb",
                    COLUMNS="80", LINES="50", WORD=WORD, WORD_RUNS=str(tmp_path / "runs.txt"),
                    WORD_DB=str(tmp_path / "db.sqlite"))
    made = subprocess.run(
        [sys.executable, "-c", "import word_agent; "
         "print(word_agent.agent.invoke('install the docs', thread_id='t').status)"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert made.stdout.strip() == "interrupted", made.stderr
    return env


def review_panel(env: dict[str, str], tmp_path: Path, *extra: str) -> str:
    """What ``interlock review`` shows of the first request at 80 columns, before quitting."""
    argv = cli_argv("review", "--agent", "word_agent:agent", "--reviewer", "bob", *extra)
    child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=60,
                          dimensions=(50, 80), cwd=str(tmp_path))
    try:
        child.expect(r"\[q\] quit\s*\r?\n> ")
        panel = str(child.before)
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    return panel


def test_review_shows_every_character_of_a_long_word(tmp_path: Path) -> None:
    env = setup(tmp_path)
    panel = review_panel(env, tmp_path)
    assert "cmd" in panel and "curl -fsS" in panel, panel
    assert WORD in joined(panel), panel
    assert ";rm${IFS}-rf${IFS}~" in joined(panel), panel
    assert "…" not in panel, panel
    assert not (tmp_path / "runs.txt").exists()


def test_show_shows_every_character_of_a_long_nested_word(tmp_path: Path) -> None:
    env = setup(tmp_path)
    argv = cli_argv("show", "t", "--agent", "word_agent:agent")
    child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=60,
                          dimensions=(50, 80), cwd=str(tmp_path))
    try:
        child.expect(pexpect.EOF)
        screen = child.before
    finally:
        child.close()
    text = joined(screen)
    assert WORD in text, screen
    assert f'"url":"{WORD}"' in text, screen  # the nested value, as JSON
    assert "…" not in screen.split("waiting for a decision")[1].split("tool calls")[0], screen


def test_a_long_thread_id_is_shown_whole_in_lists_and_titles(tmp_path: Path) -> None:
    """A thread id of the longest allowed size, with its distinguishing end last: the thread
    table (wide terminal) and the review panel's title (narrow one) show all of it."""
    env = setup(tmp_path)
    long_id = "deploy-" + "x" * 110 + "-prod-eu-9"
    assert len(long_id) <= 128
    made = subprocess.run(
        [sys.executable, "-c", "import sys, word_agent; "
         "print(word_agent.agent.invoke('again', thread_id=sys.argv[1]).status)", long_id],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert made.stdout.strip() == "interrupted", made.stderr
    argv = cli_argv("threads", "--agent", "word_agent:agent")
    listing = subprocess.run(argv, env={**env, "COLUMNS": "120"}, cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0, listing.stderr
    first_column = "".join(line.split()[0] for line in listing.stdout.splitlines()
                           if line.strip())
    assert long_id in first_column, listing.stdout
    assert "…" not in listing.stdout, listing.stdout
    panel = review_panel(env, tmp_path, "--thread", long_id)
    assert long_id in joined(panel), panel

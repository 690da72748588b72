"""`interlock review` in a pseudo-terminal: text with control characters (a terminal escape
sequence, a bell, carriage returns) goes to $EDITOR as a JSON string with those characters
escaped, not raw, so the editor and the terminal show them and nothing reads or rewrites them;
an edit of another argument sends that text exactly as the model proposed it.

Invariant 1: the reviewer confirms what runs; an argument they did not change runs as shown."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from .helpers import edit_once_in_review

ARGS = {"to": "x@example.com", "subject": "\x1b[31mURGENT\x1b[0m\x07 invoice",
        "body": "Dear Noah,\r\nyour order left.\r\nBest,\rOps\x1b[1A\x1b[2Khidden"}

AGENT = textwrap.dedent("""
    import json, os, pathlib
    from interlock import Agent, HumanInTheLoop, ScriptedModel, SqliteCheckpointer, tool

    RUNS = pathlib.Path(os.environ["CTRL_RUNS"])

    @tool
    def send_email(to: str, subject: str, body: str) -> str:
        \"\"\"Send an e-mail.\"\"\"
        with RUNS.open("a") as f:
            f.write(json.dumps({"to": to, "subject": subject, "body": body}) + "\\n")
        return "sent"

    def reply(messages):
        if messages[-1].role == "user":
            return {"name": "send_email", "args": json.loads(os.environ["CTRL_ARGS"])}
        return "done"

    agent = Agent(model=ScriptedModel(reply), tools=[send_email],
                  middleware=[HumanInTheLoop(interrupt_on={"send_email": True})],
                  checkpointer=SqliteCheckpointer(os.environ["CTRL_DB"]))
""")

EDITOR = textwrap.dedent("""
    import os, pathlib, sys
    path = pathlib.Path(sys.argv[-1])
    raw = path.read_bytes()
    pathlib.Path(os.environ["CTRL_SEEN"]).write_bytes(raw)
    path.write_bytes(raw.replace(b"x@example.com", b"y@example.com"))
""")


def test_control_characters_go_to_the_editor_escaped_and_run_unchanged(tmp_path: Path) -> None:
    runs, seen = tmp_path / "runs.txt", tmp_path / "seen.txt"
    diff = edit_once_in_review(tmp_path, AGENT, EDITOR, "mail noah", "edited send_email",
                               CTRL_RUNS=str(runs), CTRL_DB=str(tmp_path / "db.sqlite"),
                               CTRL_ARGS=json.dumps(ARGS), CTRL_SEEN=str(seen))
    document = seen.read_bytes().decode()
    # nothing a terminal would act on, and no carriage return an editor or a reader would
    # turn into a line break: each is a JSON escape in the argument's section
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", document), repr(document)
    assert "== subject (JSON) ==\n" + json.dumps(ARGS["subject"]) + "\n" in document
    assert "== body (JSON) ==\n" + json.dumps(ARGS["body"]) + "\n" in document
    assert re.search(r"unchanged:\s+subject,\s+body", diff), diff
    assert [json.loads(line) for line in runs.read_text().splitlines()] == [
        {**ARGS, "to": "y@example.com"}]

"""`interlock review` in a pseudo-terminal: an edit to a value Python finds equal to the
proposed one (``true`` for ``1``, ``1.0`` for ``1``, ``[true]`` for ``[1]``) is shown as the
change it is before the reviewer sends it, and exactly that value runs.

Invariant 1: the reviewer confirms what runs; "unchanged" is never said of a value that
changes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from .helpers import edit_once_in_review

AGENT = textwrap.dedent("""
    import json, os, pathlib
    from typing import Any
    from interlock import Agent, HumanInTheLoop, ScriptedModel, SqliteCheckpointer, tool

    RUNS = pathlib.Path(os.environ["EDIT_RUNS"])

    @tool
    def tune(value: Any) -> str:
        \"\"\"Set a tuning value.\"\"\"
        with RUNS.open("a") as f:
            f.write(json.dumps(value) + "\\n")
        return "tuned"

    def reply(messages):
        if messages[-1].role == "user":
            return {"name": "tune", "args": {"value": json.loads(messages[-1].content)}}
        return "done"

    agent = Agent(model=ScriptedModel(reply), tools=[tune],
                  middleware=[HumanInTheLoop(interrupt_on={"tune": True})],
                  checkpointer=SqliteCheckpointer(os.environ["EDIT_DB"]))
""")

EDITOR = textwrap.dedent("""
    import json, os, pathlib, sys
    path = pathlib.Path(sys.argv[-1])
    head, sep, body = path.read_text().rpartition(") ==\\n")
    # the value's section holds its JSON (pretty-printed): replace it by the edited text
    assert json.dumps(json.loads(body)) == json.dumps(json.loads(os.environ["EDIT_FROM"]))
    path.write_text(head + sep + os.environ["EDIT_TO"] + "\\n")
""")


@pytest.mark.parametrize(("proposed", "edited"), [
    ("1", "true"), ("1", "1.0"), ("[1]", "[true]"), ("0", "false")])
def test_an_edit_to_a_lookalike_value_is_shown_as_a_change_and_runs_as_sent(
        tmp_path: Path, proposed: str, edited: str) -> None:
    runs = tmp_path / "runs.txt"
    diff = edit_once_in_review(tmp_path, AGENT, EDITOR, proposed, "edited tune",
                               EDIT_RUNS=str(runs), EDIT_DB=str(tmp_path / "db.sqlite"),
                               EDIT_FROM=proposed, EDIT_TO=edited)
    assert "unchanged: value" not in diff
    shown = [line.strip(" │") for line in diff.splitlines()]
    assert any(line.startswith("+ ") for line in shown), diff
    assert [json.loads(line) for line in runs.read_text().splitlines()] == [json.loads(edited)]
    assert runs.read_text().splitlines() == [json.dumps(json.loads(edited))]

"""Agent Inbox's inputs and outputs where they vary: argument values typed into its text
fields, and model-produced text inside the markdown description."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from interlock import ActionRequest, ReviewConfig, display, tool
from interlock.server.langgraph.responses import coerce_args
from interlock.server.langgraph.shapes import inbox_description


@tool
def configure(n: int, tags: list[str], flag: bool, note: str, ratio: float | None = None,
              extra: dict[str, int] | None = None) -> str:
    """Change a setting."""
    return "ok"


def typed_in_inbox(value: Any) -> str:
    """What Agent Inbox's edit form sends: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


@given(n=st.integers(), tags=st.lists(st.text()), flag=st.booleans(), note=st.text(),
       ratio=st.none() | st.floats(allow_nan=False, allow_infinity=False),
       extra=st.none() | st.dictionaries(st.text(), st.integers()))
def test_values_typed_as_text_come_back_as_the_schema_types(
        n: int, tags: list[str], flag: bool, note: str, ratio: float | None,
        extra: dict[str, int] | None) -> None:
    args = {"n": n, "tags": tags, "flag": flag, "note": note, "ratio": ratio, "extra": extra}
    coerced = coerce_args(configure, {k: typed_in_inbox(v) for k, v in args.items()})
    assert coerced == args
    assert configure.validate_args(coerced) == args


def test_text_that_is_not_json_is_left_for_validation_to_refuse() -> None:
    assert coerce_args(configure, {"n": "seven", "note": "42"}) == {"n": "seven", "note": "42"}


TEXT = st.text(st.characters(exclude_characters="\r\x00"))


@given(description=TEXT, reason=st.none() | TEXT,
       call_id=TEXT.filter(lambda s: bool(s.strip())))
def test_model_text_is_shown_literally_in_the_markdown(description: str, reason: str | None,
                                                      call_id: str) -> None:
    md = inbox_description(
        ActionRequest(tool_call_id=call_id, name="configure", args={}, description=description,
                      reason=reason),
        ReviewConfig(action_name="configure", allowed_decisions=["approve"], reviewers=["dba"]))
    tokens = MarkdownIt("commonmark").parse(md)
    fences = [t.content for t in tokens if t.type == "fence"]
    # shown by the display policy (hidden characters escaped), and literally
    assert fences == [display.visible(description) + "\n"] + (
        [display.visible(reason) + "\n"] if reason else [])
    inline = [c for t in tokens if t.type == "inline" for c in t.children or []]
    kinds = {c.type for c in inline}
    assert not kinds & {"link_open", "image", "html_inline"}
    assert not {t.type for t in tokens} & {"html_block"}
    codes = [c.content for c in inline if c.type == "code_inline"]
    assert codes == ["configure", " ".join(display.one_line(call_id).split()), "dba"]
    # Agent Inbox's list row shows the first 65 characters as plain text: no markdown there
    row = md[:65].split("\n")[0]
    assert row == "Review a call of configure."
    assert next(t.content for t in tokens if t.type == "inline") == row

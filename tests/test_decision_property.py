"""Property test (acceptance 3): random decisions thrown at a paused thread either apply in
full or raise InvalidDecision (InvalidText for text no store can hold: a NUL character or a
lone surrogate) and leave the stored thread byte-for-byte unchanged."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from interlock import CallState, InvalidDecision, InvalidText, SqliteCheckpointer
from seed_agent import DELETE_QUERY, call, make_agent
from test_decision_errors import dump_thread
from transcript import assert_valid_transcript

IDS = ["w1", "s1", "q1"]
TURN = [
    call("write_file", {"path": "a.txt", "content": "A"}, "w1"),
    call("execute_sql", {"query": DELETE_QUERY}, "s1"),
    call("ask_user", {"question": "which?"}, "q1"),
]
ALLOWED = {"w1": {"approve", "edit", "reject", "respond"}, "s1": {"approve", "reject"},
           "q1": {"respond"}}

text = st.text(max_size=12)
edited = st.one_of(
    st.builds(lambda p, c: {"name": "write_file", "args": {"path": p, "content": c}}, text, text),
    st.just({"name": "write_file", "args": {"path": 1}}),
    st.just({"name": "no_such_tool", "args": {}}),
    st.builds(lambda q: {"name": "execute_sql", "args": {"query": q}}, text),
    st.just({"name": "read_data", "args": {"table": "t"}}),
    st.just("not an object"),
)


@st.composite
def decision(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 20)) == 0:
        return draw(st.one_of(st.none(), st.integers(), text))
    d: dict[str, Any] = {}
    kind = draw(st.sampled_from(["approve", "edit", "reject", "respond", "maybe", None]))
    if kind is not None:
        d["type"] = kind
    if draw(st.booleans()):
        d["message"] = draw(st.one_of(text, st.just(""), st.none()))
    if kind == "edit" or draw(st.integers(0, 5)) == 0:
        d["edited_action"] = draw(edited)
    if draw(st.integers(0, 3)) == 0:
        d["tool_call_id"] = draw(st.sampled_from([*IDS, "zz"]))
    if draw(st.integers(0, 3)) == 0:
        d["remember"] = draw(st.sampled_from(["thread", "forever", None]))
    return d


@st.composite
def plausible(draw: st.DrawFn, cid: str) -> dict[str, Any]:
    """A decision a reviewer could well send for ``cid`` (sometimes subtly wrong)."""
    kind = draw(st.sampled_from(sorted(ALLOWED[cid] | {"approve"})))
    d: dict[str, Any] = {"type": kind}
    if kind == "respond":
        d["message"] = draw(st.one_of(st.text(min_size=1, max_size=8), st.just("")))
    elif kind == "reject" and draw(st.booleans()):
        d["message"] = draw(text)
    elif kind == "edit":
        d["edited_action"] = draw(edited)
    elif kind == "approve" and draw(st.booleans()):
        d["remember"] = "thread"
    return d


@st.composite
def plausible_set(draw: st.DrawFn) -> Any:
    chosen = draw(st.lists(st.sampled_from(IDS), unique=True, min_size=1, max_size=3))
    if draw(st.booleans()):
        return [draw(plausible(c)) for c in IDS]
    return {c: draw(plausible(c)) for c in chosen}


decisions = st.one_of(
    st.lists(decision(), max_size=4),
    st.dictionaries(st.sampled_from([*IDS, "zz"]), decision(), max_size=4),
    plausible_set(),
    plausible_set(),
)

_counter = itertools.count()


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=decisions)
@example(raw=[{"type": "edit", "edited_action": {"name": "execute_sql",
                                                  "args": {"query": "\x00"}}}])
@example(raw={"w1": {"type": "reject", "message": "\ud800"}})
def test_random_decisions_apply_fully_or_change_nothing(tmp_path: Path, raw: Any) -> None:
    db = tmp_path / "prop.db"
    agent, tools, _ = make_agent([TURN, "done"], SqliteCheckpointer(db))
    tid = f"t{next(_counter)}"
    try:
        agent.invoke("go", thread_id=tid)
        before = dump_thread(db, tid)
        try:
            result = agent.resume(tid, raw)
        except (InvalidDecision, InvalidText):
            event("invalid: nothing stored")
            assert dump_thread(db, tid) == before
            assert tools.counts == {}
            return
        journal = {e.tool_call_id: e for e in agent.journal(tid)}
    finally:
        agent.close()
    event("valid: applied")
    pairs = list(zip(IDS, raw, strict=True)) if isinstance(raw, list) else list(raw.items())
    expected_runs: Counter[str] = Counter()
    for cid, d in pairs:
        assert d["type"] in ALLOWED[cid]
        state = journal[cid].state
        if d["type"] in ("approve", "edit"):
            assert state == CallState.SUCCEEDED
            name = d["edited_action"]["name"] if d["type"] == "edit" else journal[cid].name
            expected_runs[name] += 1
        else:
            assert state == {"reject": CallState.REJECTED,
                             "respond": CallState.RESPONDED}[d["type"]]
    for cid in set(IDS) - {c for c, _ in pairs}:
        assert journal[cid].state == CallState.PENDING_REVIEW
    assert tools.counts == expected_runs  # exactly the approved / edited calls ran, once each
    assert result.interrupted == (len(pairs) < len(IDS))
    if not result.interrupted:
        assert_valid_transcript(result.messages)

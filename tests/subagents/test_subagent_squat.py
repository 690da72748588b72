"""A sub-agent's thread id cannot be squatted: someone creates a thread under the id the
child of a call would get (``<parent>@<call id>``, predictable) before the call runs. The call
still runs its child — under an id only holders of the audit key can compute — the squatter's
thread is left as it was and cannot read the child. Before, the parent's call failed. Every
backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import StoreFactory
from interlock import InterruptOn, Reviewer
from interlock.subagents import child_thread_id, reserved_child_thread_id
from notify.agents import QUERY, executions, make_agent, make_team


def test_a_squatted_child_id_does_not_stop_the_call(stores: StoreFactory, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERLOCK_TEST_RUNS", str(tmp_path / "runs.txt"))
    store = stores()
    team = make_team(store, InterruptOn(allowed_decisions=["approve", "reject"],
                                        reviewers=["dba"]))
    squatted = child_thread_id("job-1", "ask_sqlbot")
    assert squatted == "job-1@ask_sqlbot"
    # mallory gets there first, through the same public API any reviewer has
    squatter = make_agent(store)
    assert squatter.invoke("hello", thread_id=squatted,
                           reviewer=Reviewer("mallory")).interrupted
    before = squatter.get_thread(squatted)

    result = team.invoke("tidy up", thread_id="job-1")
    assert result.interrupted, result
    child = reserved_child_thread_id("job-1", "ask_sqlbot")
    assert child.startswith("sub-") and child != squatted
    [request] = result.interrupts
    assert request.value.action_requests[0].path[-1].thread_id == child
    assert team.get_thread(child).status == "interrupted"
    done = team.resume("job-1", [{"type": "approve"}], interrupt_id=request.id,
                       reviewer=Reviewer("dana", {"dba"}))
    assert done.status == "completed", done
    assert done.messages[-1].content == "done: sqlbot: 1 row deleted"
    assert executions() == [QUERY]
    # the squatter's thread is untouched and does not see the child's work
    after = squatter.get_thread(squatted)
    assert (after.status, after.messages, after.created_by) == (
        before.status, before.messages, "mallory")
    with pytest.raises(Exception, match="may not read"):
        team.get_thread(child, reviewer=Reviewer("mallory"))

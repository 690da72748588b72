"""Race test with real processes (SPEC §5.3, issue 3 acceptance 2).

Eight processes resume the same interrupt at the same moment, 50 times over: every time
exactly one wins, the seven others get ``InterruptConflict``, and the tool runs once.
The eight workers stay up for all repetitions; each repetition arms them with the new
thread and releases them together. Below it, the same rules in one process on every backend.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from interlock import (
    Agent,
    CallState,
    Command,
    InterruptConflict,
    NoPendingInterrupt,
    StaleInterrupt,
    ThreadBusy,
)
from interlock.leases import HOST
from interlock.storage.base import RESOLVED_KEPT, Commit
from procs.common import build_agent, read_lines
from procs.harness import LineProcess, race_rounds

if TYPE_CHECKING:
    from conftest import StoreFactory

WORKERS = 8
REPETITIONS = 50



@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_eight_processes_resume_one_interrupt(stores: StoreFactory) -> None:
    effects = stores.tmp_path / "effects.log"
    agent = build_agent(stores.url(), effects, checkpointer=stores())
    agent.list_threads(limit=1)  # create the schema before the workers start
    workers = [LineProcess("race_worker.py", "--db", stores.url(), "--effects", str(effects))
               for _ in range(WORKERS)]
    started = time.monotonic()

    def pause(rep: int) -> tuple[str, str]:
        paused = agent.invoke(f"line {rep}", thread_id=f"race-{rep}")
        assert paused.interrupted
        return f"race-{rep}", paused.interrupts[0].id

    paths = race_rounds(workers, REPETITIONS, pause)
    elapsed = time.monotonic() - started
    print(f"\n{stores.kind}: {REPETITIONS} repetitions x {WORKERS} processes in "
          f"{elapsed:.1f}s; where the losers found out: {dict(paths)}")

    # the tool ran exactly once per repetition
    per_thread = Counter(line.split("|")[0] for line in read_lines(effects))
    assert per_thread == Counter({f"race-{rep}": 1 for rep in range(REPETITIONS)})
    for rep in range(REPETITIONS):
        thread = f"race-{rep}"
        [entry] = agent.journal(thread)
        assert entry.state == CallState.SUCCEEDED and entry.attempts == 1
        kinds = Counter(r.kind for r in agent.audit(thread))
        assert kinds["decision"] == 1 and kinds["tool_started"] == 1
        state = agent.get_thread(thread)
        assert state.status == "completed"
        assert [m.role for m in state.messages] == ["user", "assistant", "tool", "assistant"]
    agent.close()


# ------------------------------------------------------------- the same rules, in one process


def paused_agent(stores: StoreFactory, effects: Path) -> tuple[Agent, str]:
    agent = build_agent("", effects, checkpointer=stores())
    result = agent.invoke("line", thread_id="t")
    assert result.interrupted
    return agent, result.interrupts[0].id


def test_resume_of_an_answered_interrupt_conflicts(stores: StoreFactory, tmp_path: Path) -> None:
    agent, iid = paused_agent(stores, tmp_path / "effects.log")
    agent.resume("t", [{"type": "approve"}], interrupt_id=iid)
    with pytest.raises(InterruptConflict) as err:
        agent.resume("t", [{"type": "approve"}], interrupt_id=iid)
    assert err.value.interrupt_id == iid and "nothing ran twice" in str(err.value)
    with pytest.raises(InterruptConflict):
        agent.invoke(Command(resume={iid: {"decisions": [{"type": "approve"}]}}), thread_id="t")
    with pytest.raises(StaleInterrupt):  # an id that never existed is not a lost race
        agent.resume("t", [{"type": "approve"}], interrupt_id="no-such-id")
    with pytest.raises(NoPendingInterrupt):
        agent.resume("t", [{"type": "approve"}])
    assert len(read_lines(tmp_path / "effects.log")) == 1


def test_answered_interrupt_conflicts_while_the_winner_still_runs(
    stores: StoreFactory, tmp_path: Path
) -> None:
    """The loser loads while the winner (a live process) holds the thread: InterruptConflict
    when it names the interrupt, ThreadBusy when it does not."""
    agent, iid = paused_agent(stores, tmp_path / "effects.log")
    agent.resume("t", [{"type": "approve"}], interrupt_id=iid)
    snap = asyncio.run(agent.checkpointer.load("t"))
    assert snap is not None
    live = f"{HOST}|{os.getppid()}|other"  # another live process on this host
    t = snap.thread
    busy = t.model_copy(update={"status": "running", "version": t.version + 1,
                                "lease_owner": live,
                                "lease_until": datetime.now(UTC) + timedelta(minutes=5)})
    asyncio.run(agent.checkpointer.commit(Commit(thread=busy), expected_version=t.version))
    with pytest.raises(InterruptConflict):
        agent.resume("t", [{"type": "approve"}], interrupt_id=iid)
    with pytest.raises(ThreadBusy):
        agent.resume("t", [{"type": "approve"}])


def test_only_recent_answers_are_remembered(stores: StoreFactory, tmp_path: Path) -> None:
    """The thread row keeps the last RESOLVED_KEPT answered ids; older ones are reported as
    stale (still refused: nothing runs twice either way)."""
    agent, first = paused_agent(stores, tmp_path / "effects.log")
    iid = first
    for n in range(RESOLVED_KEPT + 1):
        agent.resume("t", [{"type": "approve"}], interrupt_id=iid)
        iid = agent.invoke(f"line {n}", thread_id="t").interrupts[0].id
        if n == 0:  # paused again on a new request: the answered one still conflicts
            with pytest.raises(InterruptConflict):
                agent.resume("t", [{"type": "approve"}], interrupt_id=first)
    assert len(agent.get_thread("t").interrupts) == 1
    snap = asyncio.run(agent.checkpointer.load("t"))
    assert snap is not None and len(snap.thread.resolved) == RESOLVED_KEPT
    with pytest.raises(StaleInterrupt):
        agent.resume("t", [{"type": "approve"}], interrupt_id=first)
    assert len(read_lines(tmp_path / "effects.log")) == RESOLVED_KEPT + 1

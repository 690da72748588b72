"""Two processes advance 200 threads of one Postgres database at the same time
(SPEC §5.3, issue 3 acceptance 3): no lost message, no duplicated tool result, no deadlock.

Each process starts 100 threads of its own (8 runs at a time), then both approve the requests
of all 200 threads concurrently, in the same order so that they collide on most threads (every
request is won by exactly one), then each sends a second message to its own threads and
approves it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from interlock import AssistantMessage, CallState, ToolMessage
from procs.common import build_agent, read_lines
from procs.harness import LineProcess

if TYPE_CHECKING:
    from conftest import StoreFactory

PER_PROCESS = 100
PHASE_TIMEOUT = 240

pytestmark = [pytest.mark.slow, pytest.mark.postgres,
              pytest.mark.parametrize("backend", ["postgres"], indirect=True)]


@pytest.fixture
def pg(stores: StoreFactory) -> StoreFactory:
    return stores


def run_phase(workers: list[LineProcess], phase: str) -> list[dict[str, int]]:
    for w in workers:
        w.send(phase)
    answers = [json.loads(w.recv(PHASE_TIMEOUT)) for w in workers]
    assert all(a["phase"] == phase for a in answers)
    return [a["outcomes"] for a in answers]


def test_two_processes_two_hundred_threads(pg: StoreFactory) -> None:
    effects = pg.tmp_path / "effects.log"
    agent = build_agent(pg.url(), effects, checkpointer=pg())
    agent.list_threads(limit=1)  # create the schema once
    common = ["--db", pg.url(), "--effects", str(effects), "--all", "a,b",
              "--count", str(PER_PROCESS)]
    workers = [LineProcess("pg_worker.py", *common, "--own", "a", "--order", "forward"),
               LineProcess("pg_worker.py", *common, "--own", "b", "--order", "forward")]
    started = time.monotonic()
    try:
        for w in workers:
            assert json.loads(w.recv(60)) == {"ready": True}
        created = run_phase(workers, "create")
        assert created == [{"interrupted": PER_PROCESS}] * 2
        approved = run_phase(workers, "approve")
        second = run_phase(workers, "second")
        assert second == [{"completed": PER_PROCESS}] * 2
    finally:
        codes = [w.close() for w in workers]
    elapsed = time.monotonic() - started
    assert codes == [0, 0]

    # every request was won by exactly one process; the other one only learned it lost
    total = Counter[str]()
    for outcome in approved:
        total.update(outcome)
    print(f"\n2 processes, {2 * PER_PROCESS} threads, {elapsed:.1f}s; approve phase: {approved}")
    assert total["won"] == 2 * PER_PROCESS
    assert set(total) <= {"won", "InterruptConflict", "ThreadBusy", "already answered"}, total

    threads = [f"{p}-{i}" for p in "ab" for i in range(PER_PROCESS)]
    effect_lines = Counter(tuple(line.split("|")[:2]) for line in read_lines(effects))
    note_lines = Counter(tuple(line.split("|")[:2])
                         for line in read_lines(effects.with_suffix(".notes")))
    assert len(effect_lines) == len(note_lines) == 2 * len(threads)
    assert set(effect_lines.values()) == set(note_lines.values()) == {1}
    audit_rows = 0
    for tid in threads:
        state = agent.get_thread(tid)
        assert state.status == "completed", (tid, state.status, state.error)
        roles = [m.role for m in state.messages]
        assert roles == ["user", "assistant", "tool", "tool", "assistant"] * 2, (tid, roles)
        calls = [c.id for m in state.messages if isinstance(m, AssistantMessage)
                 for c in m.tool_calls]
        results = [m.tool_call_id for m in state.messages if isinstance(m, ToolMessage)]
        assert results == calls  # one result per call, in call order, none lost or doubled
        journal = agent.journal(tid)
        assert [e.tool_call_id for e in journal] == calls
        assert all(e.state == CallState.SUCCEEDED and e.attempts == 1 for e in journal)
        assert {(tid, c) for c in calls} == {k for k in effect_lines | note_lines if k[0] == tid}
        audit_rows += len(agent.audit(tid))
    # the global audit log pages through every row exactly once, in id order
    ids: list[int] = []
    while batch := agent.audit(after_id=ids[-1] if ids else 0, limit=500):
        ids.extend(r.id or 0 for r in batch)
    assert ids == sorted(set(ids)) and len(ids) == audit_rows
    assert agent.verify_audit() == []
    agent.close()

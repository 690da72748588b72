"""Acceptance 4 of issue 18: two processes decide the same sub-agent request (through the
parent thread) at the same moment, over and over: every time exactly one wins and the other
gets ``InterruptConflict``; the child's tool runs once. SQLite and Postgres."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from conftest import StoreFactory
from interlock import CallState
from procs.harness import LineProcess, race_rounds
from procs.subagent_team import Effects, build_team

WORKERS = 2
REPETITIONS = 15


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_two_processes_decide_one_child_request(stores: StoreFactory) -> None:
    effects = stores.tmp_path / "effects.log"
    orch, _, _ = build_team(stores(), Effects(effects))
    orch.list_threads(limit=1)  # the schema exists before the workers start
    workers = [LineProcess("subagent_worker.py", "race", "--db", stores.url(), "--effects", str(effects))
               for _ in range(WORKERS)]
    started = time.monotonic()

    def pause(rep: int) -> tuple[str, str]:
        paused = orch.invoke("clean up", thread_id=f"race-{rep}")
        [iid] = [i.id for i in paused.interrupts
                 if i.value.action_requests[0].name == "delete_file"]
        return f"race-{rep}", iid

    where = race_rounds(workers, REPETITIONS, pause)
    print(f"\n{stores.kind}: {REPETITIONS} x {WORKERS} processes in "
          f"{time.monotonic() - started:.1f}s; where the losers found out: {dict(where)}")
    fx = Effects(effects)
    per_thread = Counter(line.split("|")[1] for line in fx.all())
    assert per_thread == Counter({f"race-{rep}@ask_researcher": 1 for rep in range(REPETITIONS)})
    for rep in range(REPETITIONS):
        thread = f"race-{rep}"
        journal = {e.tool_call_id: e.state for e in orch.journal(thread)}
        assert journal == {"ask_researcher": CallState.SUCCEEDED, "ask_dba": CallState.WAITING}
        child = orch.journal(f"{thread}@ask_researcher")
        assert [(e.state, e.attempts) for e in child] == [(CallState.SUCCEEDED, 1)]
        kinds = Counter(r.kind for r in orch.audit(f"{thread}@ask_researcher"))
        assert kinds["decision"] == 1 and kinds["tool_started"] == 1
        assert len(orch.get_thread(thread).interrupts) == 1  # dba's request still waits

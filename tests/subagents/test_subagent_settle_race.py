"""Two runs around one parent thread while a sub-agent's run advances the child, with the
interleavings that a busy machine makes now and then forced by a checkpointer that waits at
the named commit. Invariant 2: the parent, whose call waits for the child, always has a
mover; the child's outcome is read into it by one of the runs, right away, not left for a
sweep. Invariant 1: the decision given on the parent is recorded there, with its reviewer,
exactly once (its reviewer may read the parent); the child's tool runs once."""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conftest import StoreFactory
from interlock import Checkpointer, InterruptConflict
from interlock.leases import HOST
from interlock.storage.base import CallState, Commit
from procs.subagent_team import Effects, build_chain, build_team

Hook = Callable[[Commit], Awaitable[None]]


class Hooked:
    """A checkpointer that awaits ``before`` / ``after`` (when set) around every commit."""

    def __init__(self, inner: Checkpointer) -> None:
        self.inner = inner
        self.before: Hook | None = None
        self.after: Hook | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def commit(self, change: Commit, *, expected_version: int | None) -> None:
        if self.before is not None:
            await self.before(change)
        await self.inner.commit(change, expected_version=expected_version)
        if self.after is not None:
            await self.after(change)


def _decision_on(child: str) -> Callable[[Commit], bool]:
    return lambda c: c.thread.thread_id == child and any(a.kind == "decision" for a in c.audit)


def _researcher_request(orch: Any, thread: str) -> str:
    [iid] = [i.id for i in orch.get_thread(thread).interrupts
             if i.value.action_requests[0].name == "delete_file"]
    return iid


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_a_refused_second_decision_leaves_the_parent_to_the_run_that_won(
        stores: StoreFactory) -> None:
    """Bob's approval reaches the child while Alice's run (whose approval the child stored)
    advances it: Bob is refused, and the parent is not touched by his refusal, so Alice's run
    records the decision on the parent and reads the child's answer into it."""
    effects = Effects()
    winner_store = Hooked(stores())
    orch, _, _ = build_team(winner_store, effects)
    other, _, _ = build_team(stores(), effects)
    orch.invoke("clean up", thread_id="r1")
    iid = _researcher_request(orch, "r1")
    child = "r1@ask_researcher"
    stored_here = _decision_on(child)
    refused: list[BaseException] = []

    async def bob_decides(change: Commit) -> None:
        if stored_here(change) and not refused:
            with pytest.raises(InterruptConflict) as exc:
                await other.aresume("r1", [{"type": "approve"}], interrupt_id=iid,
                                    reviewer="bob")
            refused.append(exc.value)

    winner_store.after = bob_decides

    async def main() -> None:
        await orch.aresume("r1", [{"type": "approve"}], interrupt_id=iid, reviewer="alice")

    asyncio.run(main())
    assert len(refused) == 1
    assert effects.counts() == {"delete_file": 1}
    journal = {e.tool_call_id: e.state for e in orch.journal("r1")}
    assert journal == {"ask_researcher": CallState.SUCCEEDED, "ask_dba": CallState.WAITING}
    routed = [r for r in orch.audit("r1") if r.kind == "decision_routed"]
    assert [(r.actor, r.data["interrupt_id"]) for r in routed] == [("alice", iid)]
    assert Counter(r.kind for r in orch.audit(child))["decision"] == 1
    assert orch.get_thread("r1").status == "interrupted"  # the dba's request waits, nothing runs
    assert orch.verify_audit().ok


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_a_child_that_ends_while_another_run_holds_the_parent_is_read_into_it(
        stores: StoreFactory) -> None:
    """A recovery of the parent holds it and finds the child busy (Alice's run advances it);
    Alice's run ends meanwhile and is turned away from the parent (held); the recovery then
    lets the parent go. Nobody else would read the child's answer until a sweep: the
    recovery looks at the child once more after letting go and settles the parent."""
    effects = Effects()
    alice_store, sweep_store = Hooked(stores()), Hooked(stores())
    orch, _, _ = build_team(alice_store, effects)
    sweeper, _, _ = build_team(sweep_store, effects)
    orch.invoke("clean up", thread_id="r2")
    iid = _researcher_request(orch, "r2")
    child = "r2@ask_researcher"
    stored_here = _decision_on(child)

    async def main() -> None:
        decided, holding, alice_done = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def alice_waits(change: Commit) -> None:
            if stored_here(change) and not decided.is_set():
                decided.set()
                await asyncio.wait_for(holding.wait(), 30)

        async def sweep_lets_go_late(change: Commit) -> None:
            t = change.thread
            if t.thread_id == "r2" and t.status == "running" and t.lease_owner is None \
                    and not holding.is_set():
                holding.set()  # it settled the parent and found the child busy
                await asyncio.wait_for(alice_done.wait(), 30)

        alice_store.after = alice_waits
        sweep_store.before = sweep_lets_go_late

        async def alice() -> None:
            await orch.aresume("r2", [{"type": "approve"}], interrupt_id=iid,
                               reviewer="alice")
            alice_done.set()

        async def sweep() -> None:
            await decided.wait()
            await sweeper.arecover("r2")

        await asyncio.wait_for(asyncio.gather(alice(), sweep()), 60)
        assert holding.is_set() and alice_done.is_set()  # the interleaving happened

    asyncio.run(main())
    assert effects.counts() == {"delete_file": 1}
    assert orch.get_thread(child).status == "completed"
    journal = {e.tool_call_id: e.state for e in orch.journal("r2")}
    assert journal == {"ask_researcher": CallState.SUCCEEDED, "ask_dba": CallState.WAITING}
    parent = orch.get_thread("r2")
    assert parent.status == "interrupted"  # nobody holds it: the dba's request waits
    assert [i.value.action_requests[0].name for i in parent.interrupts] == ["drop_table"]
    assert orch.verify_audit().ok


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_a_parent_whose_sub_agent_waits_for_a_busy_one_of_its_own_is_left_at_once(
        stores: StoreFactory) -> None:
    """boss -> manager -> painter: the painter is advanced by another live process, so the
    manager is left ``running`` without a lease (it waits for it). Recovering the boss reads
    the manager as busy and leaves the boss to whatever moves the painter on: a few commits,
    not a loop that takes the boss again and again while the painter runs."""
    store = Hooked(stores())
    boss, manager, _ = build_chain(store, Effects())
    assert boss.invoke("paint", thread_id="b1").interrupted
    [middle] = [e.child_thread for e in boss.journal("b1")]
    assert middle is not None
    [bottom] = [e.child_thread for e in manager.journal(middle)]
    assert bottom is not None
    _set(store, bottom, f"{HOST}|{os.getppid()}|other")  # another live process advances it
    _set(store, middle, None)  # left running, without a lease, for the painter's outcome
    commits: list[str] = []

    async def count(change: Commit) -> None:
        commits.append(change.thread.thread_id)
        assert len(commits) <= 20, commits

    store.before = count
    result = boss.recover("b1")
    assert len(commits) <= 6, commits
    assert result.interrupted  # the painter's question still waits, shown on the boss
    journal = {e.tool_call_id: e.state for e in boss.journal("b1")}
    assert journal == {"ask_manager": CallState.WAITING}


def _set(store: Checkpointer, thread_id: str, owner: str | None) -> None:
    """Store ``thread_id`` as ``running`` under ``owner``'s lease (None: without a lease)."""
    snap = asyncio.run(store.load(thread_id))
    assert snap is not None
    t = snap.thread
    until = datetime.now(UTC) + timedelta(minutes=5) if owner else None
    asyncio.run(store.commit(Commit(thread=t.model_copy(update={
        "status": "running", "version": t.version + 1, "lease_owner": owner,
        "lease_until": until})), expected_version=t.version))

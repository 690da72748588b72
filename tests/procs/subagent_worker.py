"""A process of the sub-agent crash and race tests (``tests/subagents``).

``subagent_worker.py once MODE --db URL --effects FILE --thread T [--kill-at POINT]`` does one
thing and prints one JSON line:

* ``start``     send the orchestrator its task (both children pause);
* ``answer``    answer the pending question (``--chain``: the painter's, on the boss) with
                ``--value``, killed like ``decide`` with ``--kill-at``;
* ``decide``    approve (or ``--decision``) the pending request of ``--tool``'s child through
                the parent; with ``--kill-at`` the process is killed with SIGKILL right after
                the commit (or inside the tool) named by the point, see :data:`KILL_POINTS`;
* ``recover``   ``recover_stale()``, as the server does at start; an "outcome unknown" request
                that recovery raises is answered with ``--unknown-decision``;
* ``state``     the threads, journals and side effects as JSON.

``subagent_worker.py race --db URL --effects FILE`` reads ``task THREAD INTERRUPT_ID`` (answers
``armed``) and ``go`` (approves that interrupt on the parent thread and answers ``result won``,
``result conflict <where>`` or ``result error ...``); ``quit`` ends it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from common import die
from race_worker import serve
from subagent_team import CHAIN_KILL_POINTS, KILL_POINTS, Effects, build_chain, build_team

from interlock import Agent, Checkpointer, RunResult
from interlock.storage import from_url
from interlock.storage.base import CallState, Commit


class KillAt:
    """Checkpointer wrapper: dies right after the commit that matches the kill point."""

    def __init__(self, inner: Checkpointer, point: str | None, parent: str) -> None:
        self.inner = inner
        self.point = point
        self.parent = parent

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _matches(self, change: Commit) -> bool:
        t = change.thread
        role = t.parent.tool_name if t.parent is not None else "top"
        child = role == "researcher"
        bottom, middle = role == "painter", role == "manager"
        top = t.thread_id == self.parent
        kinds = {a.kind for a in change.audit}
        states = {(e.tool_call_id, e.state) for e in change.journal}
        running = any(s == CallState.RUNNING for _, s in states)
        succeeded = any(s == CallState.SUCCEEDED for _, s in states)
        match self.point:
            case "child_decision":
                return child and "decision" in kinds
            case "parent_claim" | "middle_claim" | "top_claim":
                who = {"parent_claim": top, "middle_claim": middle, "top_claim": top}
                return who[self.point] and "decision_routed" in kinds
            case "child_running" | "bottom_running":
                return (child or bottom) and running
            case "child_succeeded":
                return child and succeeded
            case "child_completed" | "bottom_completed" | "middle_completed":
                who = {"child_completed": child, "bottom_completed": bottom,
                       "middle_completed": middle}
                return who[self.point] and t.status == "completed"
            case "parent_result":
                return top and ("ask_researcher", CallState.SUCCEEDED) in states
            case "middle_result":
                return middle and succeeded
            case "top_result":
                return top and ("ask_manager", CallState.SUCCEEDED) in states
            case "parent_completed":
                return top and t.status == "completed"
            case "bottom_answer":
                return bottom and "input_answered" in kinds
        return False

    async def commit(self, change: Commit, *, expected_version: int | None) -> None:
        await self.inner.commit(change, expected_version=expected_version)
        if self._matches(change):
            die()


def build(db: str, effects: Path, kill_at: str | None = None, thread: str = "",
          chain: bool = False) -> tuple[Agent, Effects]:
    fx = Effects(effects)
    if kill_at in ("child_tool", "bottom_tool"):
        fx.after = lambda line: die()
    store: Any = from_url(db)
    if kill_at is not None and kill_at not in ("child_tool", "bottom_tool"):
        store = KillAt(store, kill_at, thread)
    top = (build_chain if chain else build_team)(store, fx)[0]
    return top, fx


def describe(result: RunResult) -> dict[str, Any]:
    return {"status": result.status, "output": result.output,
            "interrupts": [i.model_dump(mode="json") for i in result.interrupts]}


def pending_of(agent: Agent, thread: str, tool: str) -> str:
    for i in agent.get_thread(thread).interrupts:
        if i.kind == "review" and i.value.action_requests[0].name == tool:
            return i.id
    raise SystemExit(f"no pending request for {tool} on {thread}")


def state(agent: Agent, thread: str, fx: Effects) -> dict[str, Any]:
    threads = {}
    tid: str | None = thread
    todo = [thread]
    while todo:
        tid = todo.pop(0)
        t = agent.get_thread(tid)
        journal = agent.journal(tid)
        todo += [e.child_thread for e in journal if e.child_thread]
        threads[tid] = {
            "status": t.status,
            "messages": [json.loads(m.model_dump_json()) for m in t.messages],
            "interrupts": [i.model_dump(mode="json") for i in t.interrupts],
            "journal": [json.loads(e.model_dump_json()) for e in journal],
            "audit": [r.kind for r in agent.audit(tid)],
        }
    return {"threads": threads, "effects": fx.all()}


def once(a: argparse.Namespace) -> None:
    agent, fx = build(a.db, a.effects, a.kill_at, a.thread, a.chain)
    out: dict[str, Any] = {}
    if a.mode == "start":
        out["result"] = describe(agent.invoke("clean up", thread_id=a.thread))
    elif a.mode == "answer":
        [question] = agent.get_thread(a.thread).interrupts
        out["result"] = describe(agent.resume(a.thread, value=a.value,
                                              interrupt_id=question.id))
    elif a.mode == "decide":
        iid = pending_of(agent, a.thread, a.tool)
        out["result"] = describe(agent.resume(a.thread, [json.loads(a.decision)],
                                              interrupt_id=iid))
    elif a.mode == "recover":
        results = agent.recover_stale()
        out["recovered"] = [r.thread_id for r in results]
        unknown = [i for i in agent.get_thread(a.thread).interrupts
                   if i.kind == "review" and i.value.action_requests[0].reason
                   == "outcome_unknown"]
        out["unknown"] = [i.model_dump(mode="json") for i in unknown]
        for i in unknown:
            agent.resume(a.thread, [json.loads(a.unknown_decision)], interrupt_id=i.id)
    out["state"] = state(agent, a.thread, fx)
    agent.close()
    print(json.dumps(out), flush=True)


def race(a: argparse.Namespace) -> None:
    serve(build(a.db, a.effects)[0], lambda result: True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["once", "race"])
    p.add_argument("mode", nargs="?", choices=["start", "decide", "answer", "recover", "state"])
    p.add_argument("--db", required=True)
    p.add_argument("--effects", required=True, type=Path)
    p.add_argument("--thread", default="")
    p.add_argument("--tool", default="delete_file")
    p.add_argument("--kill-at", choices=KILL_POINTS + CHAIN_KILL_POINTS)
    p.add_argument("--chain", action="store_true",
                   help="boss -> manager -> painter instead of the orchestrator's team")
    p.add_argument("--value", default="green")
    p.add_argument("--decision", default='{"type": "approve"}')
    p.add_argument("--unknown-decision", default='{"type": "reject"}')
    a = p.parse_args()
    (once if a.kind == "once" else race)(a)


if __name__ == "__main__":
    main()

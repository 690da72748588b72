"""One process of the crash tests.

``resume``  answer the pending request with ``--decision`` (or ``--decisions``: a JSON list or
            mapping); with ``--kill-at`` the process is expected to be killed before it
            finishes; a refused resume is reported as ``{"error": ...}``;
``recover`` call ``agent.recover(thread)``; if that pauses with an "outcome unknown" request,
            answer it with ``--unknown-decision``;
``invoke``  send ``--message`` to the thread (recovery must happen first, automatically);
            if that is refused because an "outcome unknown" request is pending, answer it with
            ``--unknown-decision`` and send the message again.

Prints one JSON line: what the first call returned and the final state of the thread.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from common import build_agent, results_per_call, transcript

from interlock import Agent, ResumeError, RunResult, ThreadInterrupted


def describe(result: RunResult) -> dict[str, Any]:
    requests = []
    for intr in result.interrupts:
        for action in intr.value.action_requests:
            requests.append({"interrupt_id": intr.id, "tool_call_id": action.tool_call_id,
                             "name": action.name, "args": action.args,
                             "reason": action.reason, "description": action.description})
    return {"status": result.status, "output": result.output, "requests": requests}


def answer_unknown(agent: Agent, thread: str, result: RunResult, decision: str | None,
                   out: dict[str, Any]) -> RunResult:
    if result.interrupted and decision is not None:
        out["unknown_request"] = describe(result)
        return agent.resume(thread, [json.loads(decision)],
                            interrupt_id=result.interrupts[0].id)
    return result


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["resume", "recover", "invoke"])
    p.add_argument("--db", required=True)
    p.add_argument("--effects", required=True, type=Path)
    p.add_argument("--thread", required=True)
    p.add_argument("--kill-at")
    p.add_argument("--decision", default='{"type": "approve"}')
    p.add_argument("--decisions")
    p.add_argument("--interrupt-id")
    p.add_argument("--unknown-decision")
    p.add_argument("--message", default="next")
    a = p.parse_args()
    agent = build_agent(a.db, a.effects, kill_at=a.kill_at)
    out: dict[str, Any] = {}
    if a.mode == "resume":
        decisions = json.loads(a.decisions) if a.decisions else [json.loads(a.decision)]
        try:
            result = agent.resume(a.thread, decisions, interrupt_id=a.interrupt_id)
            out["first"] = describe(result)
        except ResumeError as exc:
            out["first"] = {"error": type(exc).__name__, "message": str(exc)}
            state = agent.get_thread(a.thread)
            result = RunResult(a.thread, "interrupted", state.messages, state.interrupts)
    elif a.mode == "recover":
        result = agent.recover(a.thread)
        out["first"] = describe(result)
        result = answer_unknown(agent, a.thread, result, a.unknown_decision, out)
    else:
        try:
            result = agent.invoke(a.message, thread_id=a.thread)
            out["first"] = describe(result)
        except ThreadInterrupted:
            state = agent.get_thread(a.thread)
            pending = RunResult(a.thread, "interrupted", state.messages, state.interrupts)
            out["first"] = {"refused": "ThreadInterrupted", **describe(pending)}
            answer_unknown(agent, a.thread, pending, a.unknown_decision, out)
            result = agent.invoke(a.message, thread_id=a.thread)
    state = agent.get_thread(a.thread)
    out["final"] = describe(result)
    out["messages"] = transcript(state.messages)
    out["results_per_call"] = results_per_call(state.messages)
    out["journal"] = [json.loads(e.model_dump_json()) for e in agent.journal(a.thread)]
    agent.close()
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

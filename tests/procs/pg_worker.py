"""One of two processes that advance many threads of one database concurrently.

Commands on stdin (each answered by one JSON line once done):

``create``   start this process's own threads (``--own`` prefix, ``--count`` of them); each
             pauses on a review request after its ungated call ran;
``approve``  approve the pending request of *every* thread (``--all`` prefixes), in this
             process's ``--order``; the other process does the same at the same time, so each
             request is won by one of them and the other learns it lost;
``second``   send a second message to each own thread and approve its request;
``quit``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from common import build_agent

from interlock import Agent, InterruptConflict, NoPendingInterrupt, ThreadBusy


async def run_all(ids: list[str], concurrency: int,
                  step: Callable[[str], Awaitable[str]]) -> Counter[str]:
    sem = asyncio.Semaphore(concurrency)
    outcomes: Counter[str] = Counter()

    async def one(tid: str) -> None:
        async with sem:
            try:
                outcomes[await step(tid)] += 1
            except (InterruptConflict, ThreadBusy, NoPendingInterrupt) as exc:
                outcomes[type(exc).__name__] += 1
            except Exception as exc:
                outcomes[f"error {type(exc).__name__}: {exc}"] += 1

    await asyncio.gather(*(one(t) for t in ids))
    return outcomes


def steps(agent: Agent) -> dict[str, Callable[[str], Awaitable[str]]]:
    async def create(tid: str) -> str:
        r = await agent.ainvoke("pair: first", thread_id=tid)
        return r.status

    async def approve(tid: str) -> str:
        state = await agent.aget_thread(tid)
        if not state.interrupts:
            return "already answered"
        r = await agent.aresume(tid, [{"type": "approve"}], interrupt_id=state.interrupts[0].id)
        return "won" if r.status == "completed" else r.status

    async def second(tid: str) -> str:
        r = await agent.ainvoke("pair: second", thread_id=tid)
        if not r.interrupted:
            return f"not paused: {r.status}"
        r = await agent.aresume(tid, [{"type": "approve"}], interrupt_id=r.interrupts[0].id)
        return r.status

    return {"create": create, "approve": approve, "second": second}


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--effects", required=True, type=Path)
    p.add_argument("--own", required=True)
    p.add_argument("--all", required=True, help="comma-separated thread prefixes")
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--order", choices=["forward", "reverse"], default="forward")
    p.add_argument("--concurrency", type=int, default=8)
    a = p.parse_args()
    agent = build_agent(a.db, a.effects)
    own = [f"{a.own}-{i}" for i in range(a.count)]
    every = [f"{prefix}-{i}" for i in range(a.count) for prefix in a.all.split(",")]
    if a.order == "reverse":
        every.reverse()
    await agent.alist_threads(limit=1)
    print(json.dumps({"ready": True}), flush=True)
    loop = asyncio.get_running_loop()
    todo = steps(agent)
    while True:
        cmd = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if cmd in ("", "quit"):
            break
        ids = every if cmd == "approve" else own
        outcomes = await run_all(ids, a.concurrency, todo[cmd])
        print(json.dumps({"phase": cmd, "outcomes": dict(outcomes)}), flush=True)
    await agent.checkpointer.close()


if __name__ == "__main__":
    asyncio.run(main())

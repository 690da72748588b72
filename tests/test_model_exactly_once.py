"""A model-based test of the outcomes of approved calls (issue 31): hypothesis drives random
sequences of new threads, decisions (approve, edit, reject), storage faults, sweeps and
``recover`` of one thread through one state machine, on three worlds:

* **the library on SQLite**: one agent on a SQLite file; resumes cut short by a timeout (a run
  cancelled at a random moment of its writes); the storage fault is another connection
  holding SQLite's write lock, so every write fails while it lasts;
* **the library on Postgres**: the same agent, its connections through
  :class:`pg_proxy.CuttingProxy`; the storage fault is the proxy cutting connections in the
  middle of thread writes (dropped before the server got them, or delivered with the answer
  lost);
* **the API + worker tier on Postgres** (slow): an API-only server (``serve --api-only``, straight
  to Postgres) takes the messages and decisions and queues the runs; two ``interlock worker``
  processes run them through the cutting proxy; workers are SIGKILLed or SIGTERMed at random
  (the tool takes 0.3 s, so many die mid-tool) and replaced; the sweep and ``recover`` run in
  this process, on the same database.

After every step, for every thread:

* every approved call's tool ran at most once (the tool appends ``start`` and ``end`` with its
  process id to a file);
* a call has at most one recorded outcome (one tool message per call id), and a completed
  thread's calls all have one (a call recorded as succeeded ran to its end);
* a known outcome is never turned into "unknown": the library worlds observe every outcome
  themselves, so nobody is ever asked "outcome unknown"; in the tier only about a call whose
  tool started in a worker that was SIGKILLed;
* no state is without a mover: ``interrupted`` has a request (a person), ``running`` has an
  owner (its run, or the sweep once the owner is gone), ``running`` owned by the queue has a
  queue entry (a worker), a ``failed`` thread with work left — and every ``running`` one — is
  in the sweep's index, and a ``failed`` thread outside it has no approved call left.

At the end, with the fault lifted (and, in the tier, two live workers), every thread settles
where a person or nobody needs to act: waiting for a person, or ``completed`` with its approved
call run once.

Hypothesis explores the library worlds; the tier, too slow for it to explore in a few
examples, runs the same rules in a seeded random sequence (:func:`drive`; the seed is printed,
``INTERLOCK_MODEL_SEED`` repeats its choices). Bounded in CI; ``INTERLOCK_MODEL_EXAMPLES`` /
``INTERLOCK_MODEL_STEPS`` run the library worlds longer, ``INTERLOCK_MODEL_TIER_STEPS`` the
tier.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from conftest import PG_DSN, StoreFactory, require_postgres
from interlock import (
    Agent,
    CallState,
    Checkpointer,
    InterlockError,
    PostgresCheckpointer,
    SqliteCheckpointer,
    ToolMessage,
)
from interlock.leases import QUEUED
from interlock.storage.base import FINAL_STATES, RUNNABLE_STATES, AuditRecord
from model_agent import EFFECTS_ENV, SECONDS_ENV, build, counts, effects_of
from pg_proxy import CuttingProxy

EXAMPLES = int(os.environ.get("INTERLOCK_MODEL_EXAMPLES", "8"))
STEPS = int(os.environ.get("INTERLOCK_MODEL_STEPS", "25"))
TIER_STEPS = int(os.environ.get("INTERLOCK_MODEL_TIER_STEPS", "60"))


def through(proxy: CuttingProxy, url: str) -> str:
    """``url`` with the proxy's port in place of the server's."""
    return url.replace(":5432/", f":{proxy.port}/", 1)


class World:
    """What the machine drives: an executor on a store, the tool's effects file, an agent of
    this process on the same store (sweeps, ``recover``) and a reader that no fault touches."""

    effects: Path
    agent: Agent
    reader: Checkpointer
    concurrent = False
    """Other processes move threads while the machine looks (states are re-read)."""
    can_kill = False
    queued = False
    """Runs are handed to workers through the run queue."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.faulted = False

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def invoke(self, tid: str) -> None:
        with contextlib.suppress(InterlockError):
            self.run(self.agent.ainvoke(tid, thread_id=tid))

    def decide(self, tid: str, iid: str, decision: dict[str, Any],
               timeout: float | None) -> None:
        work = self.agent.aresume(tid, [decision], interrupt_id=iid)
        with contextlib.suppress(InterlockError, TimeoutError):
            self.run(work if timeout is None else asyncio.wait_for(work, timeout))

    def fault(self, on: bool) -> None:
        raise NotImplementedError

    def kill(self, which: int, sig: signal.Signals) -> None:
        raise NotImplementedError

    def unknown_allowed(self, audit: list[AuditRecord]) -> bool:
        """Whether the "outcome unknown" requests of a thread (its ``audit``) may exist: never
        when this process observed every outcome."""
        return False

    def queue(self) -> set[str]:
        return set()

    def heal(self) -> None:
        """Lift the fault (and bring the executors back)."""
        self.fault(False)

    def settled(self, tids: list[str]) -> None:
        """Wait until nothing moves any more: here every run ended with its call."""
        with contextlib.suppress(InterlockError):
            self.run(self.agent.arecover_stale())

    def close(self) -> None:
        self.fault(False)
        with contextlib.suppress(Exception):
            self.run(self.agent.aclose())
        with contextlib.suppress(Exception):
            self.run(self.reader.close())
        self.loop.close()


class SqliteWorld(World):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="interlock-model-"))
        self.db = self.dir / "t.db"
        self.effects = self.dir / "effects.jsonl"
        self.effects.touch()
        self.reader = SqliteCheckpointer(self.db, busy_timeout=0.05)
        # renewed every 20 ms: renewals meet the tool's end and timeouts
        self.agent = build(self.effects, self.reader, lease=timedelta(milliseconds=60))
        self.holder: sqlite3.Connection | None = None

    def fault(self, on: bool) -> None:
        if on and self.holder is None:
            self.holder = sqlite3.connect(self.db, isolation_level=None)
            self.holder.execute("BEGIN IMMEDIATE")
        elif not on and self.holder is not None:
            self.holder.execute("ROLLBACK")
            self.holder.close()
            self.holder = None
        self.faulted = on


class PostgresWorld(World):
    def __init__(self) -> None:
        super().__init__()
        require_postgres()
        self.dir = Path(tempfile.mkdtemp(prefix="interlock-model-pg-"))
        self.effects = self.dir / "effects.jsonl"
        self.effects.touch()
        self.stores = StoreFactory("postgres", self.dir)
        self.reader = self.stores()
        self.run(self.reader.list_threads(limit=1))  # the schema, before any cut
        self.proxy = CuttingProxy(seed=int.from_bytes(os.urandom(2), "big"))
        self.proxy.start()
        store = PostgresCheckpointer(through(self.proxy, PG_DSN), schema=self.stores.pg_schema,
                                     notify=False)
        self.agent = build(self.effects, store, lease=timedelta(milliseconds=300))

    def fault(self, on: bool) -> None:
        self.proxy.cut = 0.4 if on else 0.0
        self.faulted = on

    totals: ClassVar[Counter[str]] = Counter()
    """Over the examples of a test: connections cut, tools started and ended (printed)."""

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.proxy.stop()
            self.stores.cleanup()
            PostgresWorld.totals.update(
                cut_before=self.proxy.counts.before, cut_after=self.proxy.counts.after,
                **Counter(e["phase"] for e in effects_of(self.effects)))


class ExactlyOnce(RuleBasedStateMachine):
    """The rules and invariants, on whichever world ``make_world`` gives."""

    threads = Bundle("threads")
    make_world: Callable[[], World] = SqliteWorld
    prefix = "a"

    def __init__(self) -> None:
        super().__init__()
        self.w = type(self).make_world()
        self.tids: list[str] = []

    @initialize()
    def schema(self) -> None:
        self.w.run(self.w.reader.list_threads(limit=1))

    # -- rules -----------------------------------------------------------------------------

    @rule(target=threads)
    def invoke(self) -> str:
        tid = f"{self.prefix}{len(self.tids) + 1}"
        self.tids.append(tid)
        self.w.invoke(tid)
        return tid

    @rule(tid=threads, how=st.sampled_from(["approve", "edit", "reject"]),
          timeout=st.one_of(st.none(), st.floats(0.0, 0.03)))
    def decide(self, tid: str, how: str, timeout: float | None) -> None:
        with contextlib.suppress(InterlockError):
            state = self.w.run(self.w.agent.aget_thread(tid))
            if not state.interrupts:
                return
            request = state.interrupts[0]
            unknown = any(a.reason == "outcome_unknown"
                          for a in getattr(request.value, "action_requests", []))
            decision: dict[str, Any] = {"type": how}
            if unknown:
                # only someone who knows may answer "outcome unknown": never here
                decision = {"type": "reject", "message": "not run again"}
            elif how == "edit":
                decision["edited_action"] = {"name": "transfer",
                                             "args": {"account": tid, "amount": 6}}
            self.w.decide(tid, str(request.id), decision, timeout)

    @rule(on=st.booleans())
    def storage_fault(self, on: bool) -> None:
        self.w.fault(on)

    @rule()
    def sweep(self) -> None:
        with contextlib.suppress(InterlockError):
            self.w.run(self.w.agent.arecover_stale())

    @rule(tid=threads)
    def recover(self, tid: str) -> None:
        with contextlib.suppress(InterlockError):
            self.w.run(self.w.agent.arecover(tid))

    @precondition(lambda self: self.w.can_kill)
    @rule(which=st.integers(0, 1), sig=st.sampled_from([signal.SIGKILL, signal.SIGTERM]))
    def kill_worker(self, which: int, sig: signal.Signals) -> None:
        self.w.kill(which, sig)

    @precondition(lambda self: self.w.concurrent)
    @rule(seconds=st.sampled_from([0.1, 0.4, 1.0]))
    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def at_most_once(self) -> None:
        started = counts(self.w.effects)
        assert all(started[t] <= 1 for t in self.tids), started

    @invariant()
    def one_outcome_and_a_mover(self) -> None:
        """Re-read while another process moves the thread: a state that stays is judged."""
        marked = self._marked()
        queued = self.w.queue()
        for tid in self.tids:
            problem = self._problem(tid, marked, queued)
            tries = 40 if self.w.concurrent else 0
            while problem is not None and tries:
                time.sleep(0.1)
                tries -= 1
                marked, queued = self._marked(), self.w.queue()
                problem = self._problem(tid, marked, queued)
            assert problem is None, (tid, problem)

    @invariant()
    def never_unknown(self) -> None:
        for tid in self.tids:
            rows = self.w.run(self.w.reader.audit(thread_id=tid))
            if any(r.kind == "outcome_unknown" for r in rows):
                # a string, so that pytest prints it whole: which owner each recovery found
                assert self.w.unknown_allowed(rows), "\n".join(
                    [f"thread {tid}: outcome unknown where no SIGKILL explains it",
                     *(f"  {r.kind} {r.ts.isoformat()} {r.data}" for r in rows),
                     *(f"  effect {e}" for e in effects_of(self.w.effects)
                       if e["account"] == tid),
                     f"  SIGKILLed pids: {sorted(getattr(self.w, 'killed', ()))}, "
                     f"stopped: {[(w.pid, code) for w, code in getattr(self.w, 'stopped', ())]}",
                     # what the processes said of the thread (the tier's workers and server)
                     *(f"  {p.name} (pid {getattr(p, 'pid', '?')}): {line.rstrip()}"
                       for p in getattr(self.w, "started", ())
                       for line in getattr(p, "lines", ()) if f"'{tid}'" in line)])

    def _marked(self) -> set[str]:
        """The threads in the sweep's index."""
        found: set[str] = set()
        after: str | None = None
        while True:
            rows = self.w.run(self.w.reader.sweep_candidates(  # type: ignore[attr-defined]
                limit=200, after=after))
            found |= {r.thread_id for r in rows}
            if len(rows) < 200:
                return found
            after = rows[-1].thread_id

    def _problem(self, tid: str, marked: set[str], queued: set[str]) -> str | None:
        snap = self.w.run(self.w.reader.load(tid))
        if snap is None:
            return None  # never stored (its first write failed): nothing to move on
        t = snap.thread
        journal = self.w.run(self.w.reader.journal(tid))
        outcomes = Counter(m.tool_call_id for m in snap.messages if isinstance(m, ToolMessage))
        if any(n > 1 for n in outcomes.values()):
            return f"a call has {max(outcomes.values())} recorded outcomes"
        ended = counts(self.w.effects, "end")[tid]
        if any(e.state == CallState.SUCCEEDED for e in journal) and ended != 1:
            return f"a call recorded as succeeded whose tool ended {ended} times"
        if t.status == "interrupted" and not t.pending:
            return "interrupted without a request"
        if t.status == "running" and not t.lease_owner:
            return "running without an owner"
        if t.status == "running" and t.lease_owner == QUEUED and self.w.queued \
                and tid not in queued:
            return "handed to the workers but not on the queue"
        work_left = t.status == "running" or (t.status == "failed" and (
            t.turn is not None or (bool(snap.messages) and snap.messages[-1].role == "tool")))
        if work_left != (tid in marked):
            return f"{t.status} (work left: {work_left}) but in the sweep index: {not work_left}"
        left = [e.state for e in journal
                if e.state in RUNNABLE_STATES or e.state == CallState.RUNNING]
        if t.status == "failed" and not work_left and left:
            return f"failed with calls {left} that no sweep takes"
        if t.status == "completed" and any(e.state not in FINAL_STATES for e in journal):
            return f"completed with calls {[e.state for e in journal]}"
        return None

    def teardown(self) -> None:
        """Every thread settles where a person or nobody needs to act, its call run once."""
        try:
            self.w.heal()
            self.w.settled(self.tids)
            started, ended = counts(self.w.effects), counts(self.w.effects, "end")
            for tid in self.tids:
                snap = self.w.run(self.w.reader.load(tid))
                if snap is None:
                    assert started[tid] == 0, tid
                    continue
                t = snap.thread
                journal = self.w.run(self.w.reader.journal(tid))
                assert t.status in ("interrupted", "completed", "failed"), (tid, t.status)
                if t.status == "interrupted":
                    assert t.pending, tid
                if t.status == "failed":  # a run that failed on the model: nothing approved
                    assert not any(e.state in RUNNABLE_STATES or e.state == CallState.RUNNING
                                   for e in journal), (tid, journal)
                succeeded = [e for e in journal if e.state == CallState.SUCCEEDED]
                assert len(succeeded) <= ended[tid] <= started[tid] <= 1, \
                    (tid, journal, started[tid], ended[tid])
                # a tool that ended has its result recorded, unless its process was killed
                # before it could store it (then a person was asked)
                audit = self.w.run(self.w.reader.audit(thread_id=tid))
                assert len(succeeded) == ended[tid] or (
                    any(r.kind == "outcome_unknown" for r in audit)
                    and self.w.unknown_allowed(audit)), (tid, journal, ended[tid])
        finally:
            self.w.close()


def run_model(machine: type[ExactlyOnce], examples: int, steps: int, *,
              shrink: bool = True) -> None:
    """Run the machine; ``shrink=False`` where a failing example cannot be replayed alike (real
    processes): it is reported as found."""
    phases = list(Phase) if shrink else [Phase.generate]
    run_state_machine_as_test(machine, settings=settings(
        max_examples=examples, stateful_step_count=steps, deadline=None, phases=phases,
        database=None if not shrink else settings.default.database,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))


def test_the_library_on_sqlite() -> None:
    run_model(ExactlyOnce, EXAMPLES, STEPS)


@pytest.mark.postgres
def test_the_library_on_postgres_with_connections_cut() -> None:
    class OnPostgres(ExactlyOnce):
        make_world = PostgresWorld

    run_model(OnPostgres, EXAMPLES, STEPS, shrink=False)
    # and one long sequence, sure to decide, fault and sweep often
    seed = int(os.environ.get("INTERLOCK_MODEL_SEED") or "0") or int.from_bytes(os.urandom(4))
    print(f"\nINTERLOCK_MODEL_SEED={seed}")
    drive(OnPostgres(), random.Random(seed), STEPS * 3,
          {"invoke": 3, "decide": 5, "storage_fault": 2, "sweep": 1.5, "recover": 1.5})
    print(f"library on Postgres: {dict(PostgresWorld.totals)}")


# -- the API + worker tier ---------------------------------------------------------------------


class TierWorld(World):
    """One API-only server and two workers (replaced when killed)."""

    concurrent = True
    can_kill = True
    queued = True
    OPTIONS = ("--claim-lease", "1", "--poll-interval", "0.2", "--recovery-interval", "1",
               "--shutdown-grace", "3", "--concurrency", "4")

    def __init__(self, root: Path) -> None:
        super().__init__()
        from server.conftest import TOKENS
        from server.live import ServeProcess

        require_postgres()
        self.root = root
        self.effects = root / "effects.jsonl"
        self.effects.touch()
        self.stores = StoreFactory("postgres", root)
        self.reader = self.stores()
        self.run(self.reader.list_threads(limit=1))  # the schema exists before the processes
        self.agent = build(self.effects, self.reader)
        tokens = root / "tokens.json"
        tokens.write_text(json.dumps(TOKENS))
        self.env = {EFFECTS_ENV: str(self.effects), SECONDS_ENV: "0.3"}
        self.proxy = CuttingProxy(seed=int.from_bytes(os.urandom(2), "big"))
        self.proxy.start()
        self.started: list[Any] = []
        self.server = ServeProcess("api", self.stores.url(), tokens, root / "exec.jsonl",
                                   ["--api-only"], agent="model_agent:make_agent", env=self.env)
        self.started.append(self.server)
        self.workers = [self.spawn(), self.spawn()]
        self.killed: set[int] = set()
        self.stopped: list[tuple[Any, int]] = []
        import httpx

        self.http = httpx.Client(timeout=30, base_url=self.server.url)

    def spawn(self) -> Any:
        from server.test_workers_pg import WorkerProcess

        w = WorkerProcess(f"worker {len(self.started)}", through(self.proxy, self.stores.url()),
                          self.root / "exec.jsonl", self.root / "release", self.OPTIONS,
                          agent="model_agent:make_agent", env=self.env)
        self.started.append(w)
        return w

    def _post(self, path: str, token: str, body: dict[str, Any]) -> int:
        from server.conftest import bearer

        for _ in range(50):
            r = self.http.post(path, headers=bearer(token), json=body)
            if r.status_code != 429:  # the rate limit: ask again
                return r.status_code
            time.sleep(0.2)
        return 429

    def invoke(self, tid: str) -> None:
        from server.conftest import BOB

        code = self._post("/api/threads", BOB, {"message": tid, "thread_id": tid})
        assert code == 202, code  # the API stores it straight to Postgres

    def decide(self, tid: str, iid: str, decision: dict[str, Any],
               timeout: float | None) -> None:
        from server.conftest import ALICE

        code = self._post(f"/api/threads/{tid}/decisions", ALICE,
                          {"interrupt_id": iid, "decisions": [decision]})
        assert code in (202, 409), code  # 409: the request changed meanwhile

    def fault(self, on: bool) -> None:
        self.proxy.cut = 0.5 if on else 0.0
        self.faulted = on

    def kill(self, which: int, sig: signal.Signals) -> None:
        victim = self.workers.pop(which % len(self.workers))
        if sig == signal.SIGKILL:
            self.killed.add(victim.pid)
        victim.proc.send_signal(sig)
        try:
            code = victim.proc.wait(60)
        except subprocess.TimeoutExpired:
            victim.proc.kill()
            raise AssertionError(f"{victim.name} still ran 60 s after {sig.name}; its output:\n"
                                 + "".join(victim.lines[-40:])) from None
        self.stopped.append((victim, code))
        self.workers.append(self.spawn())

    def unknown_allowed(self, audit: list[AuditRecord]) -> bool:
        """Only where the process that was running the call was SIGKILLed: each recovery that
        declared an outcome unknown names the owner it found (``host|pid|nonce``)."""
        recovered = [r for r in audit if r.kind == "recovered"]
        for r in audit:
            if r.kind != "outcome_unknown":
                continue
            owners = [str(x.data.get("previous_owner")).split("|") for x in recovered
                      if x.ts == r.ts]
            if not owners or not all(len(o) == 3 and o[1].isdigit()
                                     and int(o[1]) in self.killed for o in owners):
                return False
        return True

    def queue(self) -> set[str]:
        return {q.thread_id for q in self.run(self.reader.queue_list(  # type: ignore[attr-defined]
            limit=1000))}

    def heal(self) -> None:
        self.fault(False)
        for w in list(self.workers):
            if w.proc.poll() is not None:
                self.workers.remove(w)
        while len(self.workers) < 2:
            self.workers.append(self.spawn())

    def settled(self, tids: list[str]) -> None:
        """Until every thread waits for a person or completed (the workers' sweeps and claims
        move the rest), within two minutes."""
        deadline = time.monotonic() + 120
        while True:
            states = [self.run(self.reader.load(t)) for t in tids]
            if all(s is None or s.thread.status == "completed"
                   or (s.thread.status == "interrupted" and s.thread.pending) for s in states):
                return
            if time.monotonic() > deadline:
                raise AssertionError([(s.thread.thread_id, s.thread.status, s.thread.lease_owner)
                                      for s in states if s is not None])
            time.sleep(0.3)

    def close(self) -> None:
        """Stop everything; the processes exited cleanly and logged no traceback."""
        try:
            self.http.close()
            from server.live import stop_all

            codes = stop_all(self.started)
            for p in self.started:
                assert not any("Traceback" in line for line in p.lines), "".join(p.lines)
            assert all(code == 0 for _, code in codes), codes
            # a worker stopped with SIGTERM let its tool finish and exited cleanly
            assert all(code == 0 for w, code in self.stopped if w.pid not in self.killed), \
                [(w.name, code, "".join(w.lines)) for w, code in self.stopped]
        finally:
            self.proxy.stop()
            super().close()
            self.stores.cleanup()


def drive(machine: ExactlyOnce, rng: random.Random, steps: int,
          weights: dict[str, float]) -> None:
    """The machine's rules in a seeded random sequence (``weights``: how often each), its
    invariants after every step, its teardown at the end: for worlds too slow for hypothesis
    to explore in a few examples (its swarm of rule subsets leaves most of them idle)."""
    machine.schema()
    for _ in range(steps):
        name = rng.choices(list(weights), list(weights.values()))[0]
        if name == "invoke" or not machine.tids:
            machine.invoke()
        elif name == "decide":  # mostly a thread that waits for a decision
            waiting = [t for t in machine.tids if (snap := machine.w.run(
                machine.w.reader.load(t))) is not None and snap.thread.pending]
            timeout = None if machine.w.concurrent or rng.random() < 0.5 else rng.uniform(0, 0.03)
            machine.decide(rng.choice(waiting or machine.tids),
                           rng.choice(["approve", "approve", "approve", "edit", "reject"]),
                           timeout)
        elif name == "storage_fault":
            machine.storage_fault(not machine.w.faulted)
        elif name == "sweep":
            machine.sweep()
        elif name == "recover":
            machine.recover(rng.choice(machine.tids))
        elif name == "kill_worker":
            machine.kill_worker(rng.randrange(2), rng.choice([signal.SIGKILL, signal.SIGTERM]))
        else:
            machine.wait(rng.choice([0.1, 0.4, 1.0]))
        machine.at_most_once()
        machine.one_outcome_and_a_mover()
        machine.never_unknown()
    machine.teardown()


@pytest.mark.postgres
@pytest.mark.slow
def test_the_api_and_worker_tier_with_workers_killed_and_connections_cut(
        tmp_path: Path) -> None:
    seed = int(os.environ.get("INTERLOCK_MODEL_SEED") or "0") or int.from_bytes(os.urandom(4))
    print(f"\nINTERLOCK_MODEL_SEED={seed}")
    world = TierWorld(tmp_path)

    class OnTheTier(ExactlyOnce):
        make_world = staticmethod(lambda: world)

    drive(OnTheTier(), random.Random(seed), TIER_STEPS,
          {"invoke": 3, "decide": 5, "storage_fault": 1.5, "sweep": 1, "recover": 1,
           "kill_worker": 1.5, "wait": 2})
    phases = Counter(e["phase"] for e in effects_of(world.effects))
    print(f"tier: {len(world.started) - 1} workers started, {len(world.killed)} SIGKILLed, "
          f"{len(world.stopped) - len(world.killed)} SIGTERMed; cuts {world.proxy.counts}; "
          f"tools {dict(phases)}")

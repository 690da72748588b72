"""``Agent``: model + tools + middleware + checkpointer. Async core, thin sync wrappers."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from datetime import UTC, datetime, timedelta
from os import PathLike
from typing import Any

from . import observe
from ._engine import (
    DEFAULT_THREADS,
    ResumeSpec,
    RunDeps,
    Sink,
    SnapshotCache,
    Step,
    T,
    ThreadTxn,
    build_tool_handler,
    finish_pending,
    held_threads,
    only_here,
    perform,
    public_interrupt,
    run_result,
)
from ._engine import decide as _decide
from ._engine import loop as _loop
from ._engine.runner import ChildRunner  # beside the package: one import level less
from ._failures import stop_if_cancelled
from ._sync import iterate_blocking, run_blocking
from ._tool_threads import start_worker
from .audit.key import load_key
from .audit.verify import AuditHead, AuditReport, export_head, verify_store
from .authz import (
    Reviewer,
    check_name,
    check_outcome,
    check_read,
    facts_of,
    may_read,
    read_keys,
    reviewer_keys,
)
from .call_outcome import CallOutcome
from .errors import (
    CallNotFound,
    ConfigurationError,
    InterlockError,
    InterlockWarning,
    SubAgentMismatch,
    SubAgentThread,
    ThreadBusy,
    ThreadNotFound,
)
from .events import Event, RunCompleted
from .inputs import Command as Command  # its import path since the start
from .inputs import coerce_input as _coerce_input
from .inputs import count_of as _count
from .inputs import known_thread as _known
from .inputs import resumed_thread
from .inputs import reviewer_of as _reviewer
from .inputs import thread_of as _thread_of
from .integrations import expand_tools
from .leases import process_owner
from .middleware import bind
from .models.base import Model
from .models.resolve import resolve_model
from .paging import iter_threads
from .result import RunResult
from .storage.base import (
    AuditRecord,
    Checkpointer,
    JournalEntry,
    RememberedApproval,
    ThreadRecord,
    parent_chain,
)
from .storage.memory import MemoryCheckpointer
from .subagents import SubAgentTool
from .sweeps import stale_threads
from .text import check_input
from .thread_state import ThreadState as ThreadState  # its import path since the start
from .tools import Tool, ToolSource

log = logging.getLogger("interlock")

CLOSE_WAIT = 30.0
"""Seconds ``Agent.close()`` waits for tools still running after their run was cancelled."""

_UNSET: Any = object()
"""How far up the parents of a sub-agent's thread are followed."""


def _check_arguments(
    *, tools: object, middleware: object, checkpointer: object, system_prompt: object,
    max_turns: object, lease: object, tool_grace: object, clock: object, name: object,
    cached_threads: object,
) -> None:
    """Refuse an ``Agent(...)`` argument of the wrong kind before anything uses it: a value
    of the wrong type would otherwise fail later, deep in a run (``lease=60`` in the middle
    of a tool call, with the thread stored as failed), as an error that names no argument."""
    if not _is_list_like(tools) or isinstance(tools, Tool | ToolSource) or callable(tools):
        one = getattr(tools, "name", None) or getattr(tools, "__name__", None)
        raise ConfigurationError(
            f"tools={tools!r} is not a list: Agent(tools=...) takes a list of tools, even for "
            f"one, e.g. tools=[{one if isinstance(one, str) else 'execute_sql'}].")
    if not _is_list_like(middleware) or hasattr(middleware, "after_model") \
            or hasattr(middleware, "wrap_tool_call"):
        kind = type(middleware).__name__
        raise ConfigurationError(
            f"middleware={kind}(...) is not a list: Agent(middleware=...) takes a list, even "
            f"for one, e.g. middleware=[{kind}(...)].")
    if checkpointer is not None:
        if isinstance(checkpointer, str | bytes | PathLike):
            raise ConfigurationError(
                f"checkpointer={checkpointer!r} is a path or URL, not a checkpointer: pass a "
                f"store, e.g. checkpointer=SqliteCheckpointer('interlock.db') or "
                f"PostgresCheckpointer('postgresql://user@host/db'); "
                f"interlock.storage.from_url(url) opens one from a --db URL.")
        if isinstance(checkpointer, type):
            raise ConfigurationError(
                f"checkpointer={checkpointer.__name__} is a class: pass an instance, e.g. "
                f"checkpointer=SqliteCheckpointer('interlock.db').")
        if not callable(getattr(checkpointer, "load", None)) \
                or not callable(getattr(checkpointer, "commit", None)):
            raise ConfigurationError(
                f"checkpointer={checkpointer!r} is not a checkpointer: pass "
                f"MemoryCheckpointer(), SqliteCheckpointer('interlock.db') or "
                f"PostgresCheckpointer(dsn).")
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise ConfigurationError(
            f"system_prompt must be a string (or None), got {type(system_prompt).__name__} "
            f"{system_prompt!r}.")
    for arg, value, least in (("max_turns", max_turns, 1), ("cached_threads", cached_threads, 0)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigurationError(
                f"{arg} must be a whole number, got {type(value).__name__} {value!r}.")
        if value < least:
            raise ConfigurationError(
                f"{arg} must be at least {least}, got {value}"
                + (" (0 turns the cache off)." if arg == "cached_threads" else "."))
    for arg, value in (("lease", lease), ("tool_grace", tool_grace)):
        if not isinstance(value, timedelta):
            raise ConfigurationError(
                f"{arg} must be a datetime.timedelta, got {type(value).__name__} {value!r}: "
                f"write {arg}=timedelta(seconds=...).")
    if lease <= timedelta(0):  # type: ignore[operator]
        raise ConfigurationError(f"lease must be positive, got {lease}.")
    if tool_grace < timedelta(0):  # type: ignore[operator]
        raise ConfigurationError("tool_grace must not be negative.")
    if clock is not None and not callable(clock):
        raise ConfigurationError(
            f"clock must be a function returning an aware datetime, got {clock!r}.")
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"name must be a non-empty string, got {name!r}.")


def _is_list_like(value: object) -> bool:
    """A list, tuple or other iterable of items, not a string or a mapping."""
    return isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping)


class Agent:
    """An LLM with tools whose dangerous calls wait for a person.

    All configuration is keyword-only. ``checkpointer`` defaults to an in-memory store (not
    durable; logged). Every public method has an async form (``ainvoke``) and a sync form
    (``invoke``) that runs the same code; the sync form refuses to run inside an event loop.
    ``cached_threads``: how many threads' messages this process keeps after using them, so
    that continuing one of them reads only its new messages from the store (0: off).
    ``max_turns``: the most model calls of one run; each ``invoke``, ``resume`` or answer is a
    run and counts from zero (``RunLimitExceeded`` past it).
    """

    def __init__(
        self,
        *,
        model: Model | str,
        tools: Sequence[Tool | ToolSource | Callable[..., Any] | object] = (),
        middleware: Sequence[object] = (),
        checkpointer: Checkpointer | None = None,
        system_prompt: str | None = None,
        max_turns: int = 25,
        lease: timedelta = timedelta(minutes=5),
        tool_grace: timedelta = timedelta(seconds=30),
        clock: Callable[[], datetime] | None = None,
        name: str = "agent",
        cached_threads: int = DEFAULT_THREADS,
    ) -> None:
        _check_arguments(
            tools=tools, middleware=middleware, checkpointer=checkpointer,
            system_prompt=system_prompt, max_turns=max_turns, lease=lease,
            tool_grace=tool_grace, clock=clock, name=name, cached_threads=cached_threads)
        self.model = resolve_model(model)
        self.tools: list[Tool]
        self.tools, self.tool_sources = expand_tools(tools)
        self.tools_by_name: dict[str, Tool] = {}
        for t in self.tools:
            if t.name in self.tools_by_name:
                raise ConfigurationError(
                    f"Two tools are named {t.name!r}; tool names must be unique. Rename one "
                    f"with @tool(name=...)."
                )
            self.tools_by_name[t.name] = t
            for problem in getattr(t, "missing", ()):
                warnings.warn(f"Agent {name!r}: tool {t.name!r} has {problem}.",
                              InterlockWarning, stacklevel=2)
        if any(not getattr(t, "is_async", True) for t in self.tools):
            start_worker()  # sync tools run in the tool pool: its thread starts now, once
        self.middleware: list[object] = list(middleware)
        if len({id(m) for m in self.middleware}) != len(self.middleware):
            raise ConfigurationError("The same middleware instance is listed twice.")
        self._bound = [bind(mw, list(self.tools_by_name)) for mw in self.middleware]
        subagents = [t for t in self.tools if isinstance(t, SubAgentTool)]
        if checkpointer is None and subagents:
            checkpointer = subagents[0].runner.checkpointer  # their threads live with ours
        if checkpointer is None:
            checkpointer = MemoryCheckpointer()
            log.info("Agent %r: no checkpointer given, using MemoryCheckpointer (not durable)",
                     name)
        self.checkpointer: Checkpointer = checkpointer
        if getattr(checkpointer, "read_keys", False) is None:
            # the rule the store's migration needs for threads stored before its readers
            # index; the agent owns it and gives it to a store built without it
            setattr(checkpointer, "read_keys", read_keys)  # noqa: B010
        for sub in subagents:
            if sub.runner.checkpointer is not checkpointer:
                raise SubAgentMismatch(
                    f"Agent {name!r}: the sub-agent tool {sub.name!r} (agent "
                    f"{sub.runner.name!r}) keeps its threads in {sub.runner.checkpointer!r}, "
                    f"this agent in {checkpointer!r}. A sub-agent's thread is recovered, "
                    f"decided and cancelled through its parent's, so both must use the same "
                    f"checkpointer object: pass checkpointer=... the same store to both."
                )
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.lease = lease
        self.tool_grace = tool_grace
        self._streamed: set[asyncio.Task[Any]] = set()
        """The runs of :meth:`astream` calls not finished yet (:meth:`aclose` ends them)."""
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now(UTC))
        self.name = name
        self.owner = process_owner()
        self.tool_handler = build_tool_handler(self._bound)
        self._snapshots = SnapshotCache(cached_threads)
        # the key that signs the audit rows of every commit: read once, now, rather than by
        # the first commit; a missing key is still created, and a bad one still refused, by
        # the first commit that needs it
        with contextlib.suppress(ConfigurationError, OSError):
            load_key(create=False)

    def __repr__(self) -> str:
        return (
            f"Agent(name={self.name!r}, model={self.model!r}, "
            f"tools={[t.name for t in self.tools]}, checkpointer={self.checkpointer!r})"
        )

    def as_tool(self, *, name: str | None = None, description: str | None = None) -> Tool:
        """This agent as a tool of another agent (on the same checkpointer).

        The tool takes one argument, ``task`` (the child's user message), and returns the
        child's final answer. Each call runs the child in its own thread, whose id is
        derived from the parent's thread and call (:func:`interlock.subagents.child_thread_id`).
        When the child pauses, the parent pauses too and shows the child's requests with their
        path; decide them on the parent thread. See docs/subagents.md."""
        return SubAgentTool(
            ChildRunner(self), name=name or self.name,
            description=description if description is not None else
            f"Give the {self.name} agent a task; it works on it with its own tools and "
            f"answers with its result.")

    async def _root(self, thread_id: str) -> str:
        """The thread that drives ``thread_id``: itself, or for a sub-agent's thread the
        top-most parent (which this agent must be the agent of)."""
        chain = await parent_chain(self.checkpointer, _known(thread_id))
        tid = chain[-1].thread_id if chain else _known(thread_id)
        agent: Agent = self
        for link in reversed(chain):
            tool = agent.tools_by_name.get(link.tool_name)
            if not (isinstance(tool, SubAgentTool) and isinstance(tool.runner, ChildRunner)
                    and isinstance(tool.runner.agent, Agent)):
                raise SubAgentThread(
                    thread_id, chain[0].thread_id, chain[0].tool_call_id,
                    f"it is settled through thread {tid!r}, run by agent {chain[-1].agent!r} "
                    f"with the sub-agent tool {chain[-1].tool_name!r}; use that agent (agent "
                    f"{self.name!r} is not it).")
            agent = tool.runner.agent
        return tid

    def keeps_unstored(self, thread_id: str) -> bool:
        """Whether this process knows an outcome of ``thread_id`` that its store may not hold:
        a tool's result the store did not take yet (the write failed), or a call whose tool
        it never started although the call's ``running`` write may have landed (its answer
        was lost; not when the store refused the write). A run of the thread in this process
        settles it; once the process is gone, the call's outcome is asked as unknown (SQLite
        also keeps such results in a spill directory next to the database, which outlives
        the process; other stores do not). A worker holding such a thread's claim keeps
        trying instead of giving the claim back."""
        return only_here(self.checkpointer, thread_id)

    def allows_approve(self, tool_name: str) -> bool:
        """Whether every review policy lets ``tool_name`` be approved (for cross-tool edits)."""
        return self._deps().allows_approve(tool_name)

    # ------------------------------------------------------------------ running

    def _deps(self) -> RunDeps:
        observer = observe.current()
        return RunDeps(
            model=self.model if observer is None else observer.model(self.model),
            tools=self.tools, tools_by_name=self.tools_by_name,
            middleware=self._bound,
            tool_handler=self.tool_handler if observer is None
            else observer.tool_handler(self.tool_handler),
            system_prompt=self.system_prompt, max_turns=self.max_turns, lease=self.lease,
            clock=self.clock, owner=self.owner, tool_grace=self.tool_grace,
            snapshots=self._snapshots, agent_name=self.name, observer=observer,
        )

    async def _perform(
        self, thread_id: str, step: Callable[[ThreadTxn, RunDeps], Awaitable[T]], *,
        sink: Sink | None = None, on_stored: Callable[[], None] | None = None,
        handoff: bool = False, claimed: bool = False, create: bool = False,
    ) -> T:
        """Every operation on a thread goes through the engine's one entry; its thread id is
        checked here, once (``create``: the operation may create the thread)."""
        thread_id = _known(thread_id, create=create)
        deps = self._deps()
        bound: Step[T] = lambda txn: step(txn, deps)  # noqa: E731
        return await perform(self.checkpointer, deps, thread_id, bound, sink=sink,
                             on_stored=on_stored, handoff=handoff, claimed=claimed)

    async def ainvoke(
        self, input: Any, *, thread_id: str | None = None,
        config: Mapping[str, Any] | None = None,
        on_stored: Callable[[], None] | None = None,
        on_event: Callable[[Event], Awaitable[None]] | None = None,
        reviewer: Reviewer | str | None = None,
        handoff: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Send a user message (or a ``Command``) and run until the answer or a pause.

        ``input`` is a string (one user message), a message, a dict ``{"role": ...,
        "content": ...}``, a ``("role", "content")`` pair (LangChain's role names too: human,
        ai, developer), a list of these, or LangGraph's ``{"messages": <any of these>}``;
        anything else is a ``ConfigurationError`` and nothing is stored.

        The thread is ``thread_id=...``; LangChain's ``config={"configurable": {"thread_id":
        ...}}`` names it too.

        ``on_stored`` is called once the message (or the resume) is durably stored, before the
        run goes on (the review server answers its HTTP request then); ``on_event`` receives
        the run's events as :meth:`astream` yields them (without the final ``RunCompleted``).
        ``reviewer``: who sends the message (``None``: the application itself). A new thread
        records it as its creator; an existing thread takes messages only from its creator and
        holders of the ``admin`` role (:mod:`interlock.authz`), otherwise
        :class:`NotAuthorized`. The review requests of the run record it, so that
        ``InterruptOn(self_approval=False)`` keeps that identity from approving them.
        ``handoff``: store the input and put the run on the store's run queue, in one commit,
        for a worker process (``interlock worker``) to run; returns at once with status
        ``queued`` (needs a store with a run queue: Postgres). ``metadata``: stored with a
        new thread (``ThreadState.metadata``; LangGraph's thread metadata), ignored for an
        existing one."""
        thread_id = _thread_of("invoke", thread_id, config)
        rv, who = _reviewer(reviewer)
        check_input(metadata, "the thread metadata")
        if isinstance(input, Command):
            spec = ResumeSpec(command=input.resume, has_command=True, reviewer=rv, actor=who)
            return await self._perform(
                thread_id, lambda txn, deps: _loop.resume(txn, deps, spec), sink=on_event,
                on_stored=on_stored, handoff=handoff)
        messages = _coerce_input(input)
        return await self._perform(
            thread_id, lambda txn, deps: _loop.start(txn, deps, messages, rv, metadata),
            sink=on_event, on_stored=on_stored, handoff=handoff, create=True)

    async def aresume(
        self,
        thread_id: str,
        decisions: Any = None,
        *,
        value: Any = _UNSET,
        interrupt_id: str | None = None,
        reviewer: Reviewer | str | None = None,
        actor: str | None = None,
        on_stored: Callable[[], None] | None = None,
        on_event: Callable[[Event], Awaitable[None]] | None = None,
        handoff: bool = False,
    ) -> RunResult:
        """Answer the pending request and continue the run.

        ``decisions``: a list (one per pending call, in order) or a mapping
        ``{tool_call_id: decision}`` (any subset; the rest stay pending). A decision is a dict
        (``{"type": "approve"}``, LangChain shapes) or ``Approve()``, ``Edit(...)``, ...
        ``value``: the answer to a pending ``interrupt(...)``.
        ``reviewer``: who decides (a :class:`Reviewer` with roles, or an id); ``actor``: the
        name recorded in the audit log when it differs from the reviewer's id (default: the
        reviewer's id, ``local`` without one).
        ``on_stored`` / ``on_event``: as for :meth:`ainvoke` — ``on_stored`` is called once the
        decisions are durably stored, even if the run then fails. ``handoff``: as for
        :meth:`ainvoke` (the decisions and the queued run in one commit).
        """
        thread_id = resumed_thread(thread_id)
        rv, who = _reviewer(reviewer)
        if decisions is None and value is _UNSET:
            raise ConfigurationError(
                f"resume({thread_id!r}) needs decisions=[...] for a review request or value=... "
                f"for an interrupt() question."
            )
        spec = ResumeSpec(decisions=decisions, value=None if value is _UNSET else value,
                          has_value=value is not _UNSET, interrupt_id=interrupt_id,
                          reviewer=rv, actor=check_name(actor) if actor else who)
        return await self._perform(thread_id, lambda txn, deps: _loop.resume(txn, deps, spec),
                                   sink=on_event, on_stored=on_stored, handoff=handoff)

    async def astream(self, input: Any, *, thread_id: str | None = None,
                      config: Mapping[str, Any] | None = None,
                      reviewer: Reviewer | str | None = None) -> AsyncIterator[Event]:
        """Like :meth:`ainvoke` (a ``Command`` resumes), yielding events as they happen.
        The last event is always :class:`RunCompleted` with the result."""
        tid = _thread_of("stream", thread_id, config)
        queue: asyncio.Queue[Event | None] = asyncio.Queue()

        async def sink(event: Event) -> None:
            await queue.put(event)

        async def work() -> RunResult:
            try:
                return await self.ainvoke(input, thread_id=tid, on_event=sink,
                                          reviewer=reviewer)
            finally:
                await queue.put(None)

        task = asyncio.create_task(work())
        self._streamed.add(task)
        task.add_done_callback(self._streamed.discard)
        try:
            while True:
                event = await queue.get()
                if event is None:
                    break
                yield event
            result = await task
            yield RunCompleted(tid, result)
        finally:
            if not task.done():
                # the consumer left early: the run is cancelled as a caller's timeout cancels
                # it, and seen to its end (a running tool is waited for and its outcome
                # stored) before the stream is done
                if not task.cancelling():
                    task.cancel()
                await asyncio.wait({task})

    async def arun_queued(self, thread_id: str, *,
                          on_event: Callable[[Event], Awaitable[None]] | None = None,
                          ) -> RunResult:
        """Run what a hand-off left on the run queue for ``thread_id``: called by a worker
        that claimed the queue entry (see :mod:`interlock.worker`). A thread whose previous
        worker stopped mid-run is recovered by the journal rules (a call that was running is
        retried only when idempotent, else asked about); one whose run is already done
        returns its state."""
        return await self._perform(thread_id, _loop.claimed, sink=on_event, claimed=True)

    async def arecover(self, thread_id: str) -> RunResult:
        """Continue a thread that stopped mid-run (crash, failed model call). Calls that had
        finished are never repeated; see the journal semantics in the docs. A sub-agent's
        thread is recovered through its top-most parent thread (whose result is returned)."""
        # a thread queued for a worker (``handoff``) is taken too: nobody may hold it yet
        return await self._perform(await self._root(thread_id), _loop.recover, claimed=True)

    async def arecover_stale(self) -> list[RunResult]:
        """Recover every thread whose run stopped because its process is gone (status
        ``running``, owner dead or lease expired), and every thread whose run failed part-way
        with work left (status ``failed`` with an approved call not run yet, or tool results
        the model was not called with): each continues, or pauses with an "outcome unknown"
        request where the journal requires one; and every thread for which this process
        holds a tool's result the store did not take (another process that took it over
        asked about that call as unknown: the result is stored now). Threads still advanced
        by a live process are left alone. ``interlock serve`` runs this at start and
        periodically; ``interlock recover`` runs it once."""
        stale = await stale_threads(self.checkpointer, self.clock())
        stale += [t for t in held_threads(self.checkpointer) if t not in stale]
        results: list[RunResult] = []
        for thread_id in stale:
            stop_if_cancelled()  # asked to stop while the last one was recovered: no next one
            try:
                results.append(await self.arecover(thread_id))
            except ThreadBusy:
                continue  # taken over (or resumed) by someone else meanwhile
            except InterlockError as exc:
                log.warning("recovery of thread %r stopped: %s", thread_id, exc)
        return results

    async def acancel(
        self, thread_id: str, *, reason: str | None = None,
        reviewer: Reviewer | str | None = None,
    ) -> RunResult:
        """Close every pending call with a "cancelled by reviewer" result; the thread goes idle.
        ``reviewer`` needs the right to decide every pending call (:mod:`interlock.authz`).

        A thread whose run stopped mid-way (its process died) is taken over first: a call
        that was running then gets its result if this process kept it, else it is closed as
        "outcome unknown" (it may have taken effect), never as "did not run"; the ``cancelled``
        audit row lists such calls under ``outcome_unknown``."""
        rv, _ = _reviewer(reviewer)
        check_input(reason, "the cancel reason")

        async def step(txn: ThreadTxn, deps: RunDeps) -> RunResult:
            await _decide.cancel(txn, deps, reason, rv)
            return run_result(txn.snapshot)

        return await self._perform(thread_id, step)

    async def aexpire_due(self) -> list[RunResult]:
        """Apply ``expires_after`` deadlines on every thread with a request past its deadline
        and continue the runs whose requests are now fully resolved. Only the threads the
        store's deadline index reports as due are loaded."""
        results: list[RunResult] = []
        tried: set[str] = set()
        roots: set[str] = set()
        while True:
            due = [t for t in await self.checkpointer.due(now=self.clock(), limit=200)
                   if t not in tried]
            if not due:
                break
            for thread_id in due:
                stop_if_cancelled()  # asked to stop while the last one expired: no next one
                tried.add(thread_id)
                try:
                    root = await self._root(thread_id)  # a sub-agent's: through its parent
                    if root in roots:
                        continue
                    roots.add(root)
                    tried.add(root)
                    result = await self._perform(root, _loop.expire)
                except InterlockError as exc:
                    log.warning("expiry of thread %r skipped: %s", thread_id, exc)
                    continue
                if result is not None:
                    results.append(result)
        return results

    # ------------------------------------------------------------------ reading

    async def aget_thread(self, thread_id: str, *,
                          reviewer: Reviewer | str | None = None) -> ThreadState:
        """A thread as stored. With ``reviewer``: only if that identity may read it."""
        snap = await self.checkpointer.load(_known(thread_id))
        if snap is None:
            raise ThreadNotFound(
                thread_id, in_memory=isinstance(self.checkpointer, MemoryCheckpointer))
        t = snap.thread
        if reviewer is not None:
            check_read(_reviewer(reviewer)[0], facts_of(t))
        return ThreadState(
            thread_id=t.thread_id, status=t.status, version=t.version, messages=snap.messages,
            interrupts=[public_interrupt(i) for i in t.pending], remembered=list(t.remembered),
            journal=sorted(snap.journal.values(), key=lambda e: e.position),
            created_at=t.created_at, updated_at=t.updated_at, error=t.error, preview=t.preview,
            metadata=t.metadata, created_by=t.created_by, parent=t.parent,
        )

    async def acall_outcome(self, thread_id: str, tool_call_id: str, *,
                            reviewer: Reviewer | str | None = None) -> CallOutcome:
        """Who decided a call, what and when (:class:`CallOutcome`). With ``reviewer``: only
        if that identity may read the thread or could decide the call (a reviewer who lost a
        race to another learns who won it)."""
        snap = await self.checkpointer.load(_known(thread_id))
        if snap is None:
            raise ThreadNotFound(
                thread_id, in_memory=isinstance(self.checkpointer, MemoryCheckpointer))
        # the whole journal, not the open turn's: a finished run's calls are asked about too
        # (the latest call with this id, should a model reuse ids across turns)
        entry = snap.journal.get(tool_call_id) or next(
            (e for e in reversed(await self.checkpointer.journal(thread_id))
             if e.tool_call_id == tool_call_id), None)
        if entry is None:
            raise CallNotFound(thread_id, tool_call_id)
        if reviewer is not None:
            review = entry.review
            check_outcome(_reviewer(reviewer)[0], facts_of(snap.thread),
                          review.reviewers if review is not None else None, review is not None)
        return CallOutcome.of(thread_id, entry)

    async def alist_threads(
        self, *, status: str | None = None, limit: int = 50, before: datetime | None = None,
        before_id: str | None = None, search: str | None = None,
        reviewer: Reviewer | str | None = None, top_level: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[ThreadRecord]:
        """Threads, newest first; page with ``before`` / ``before_id`` = the last row's
        ``updated_at`` / ``thread_id`` (see :mod:`interlock.paging`). ``search``: only threads
        whose id, latest message preview or pending requests (tool names, arguments,
        questions) contain this text, ignoring case. With ``reviewer``: only the threads it
        may read (:mod:`interlock.authz`). ``top_level``: without sub-agents' threads
        (:meth:`as_tool`; their requests are shown and decided on their parents).
        ``metadata``: only threads whose metadata (given when they were started) contains
        it, as Postgres's ``jsonb @>`` decides (``{"user": "ann"}`` finds the threads whose
        ``user`` is ``"ann"``; see :func:`interlock.storage.base.metadata_contains`)."""
        rv, _ = _reviewer(reviewer)
        limit = _count("limit", limit, 1)
        if before_id is not None:
            before_id = _known(before_id, create=True)
        # only passed when asked for: a store written before the filter existed still lists
        extra: dict[str, Any] = {"metadata": dict(metadata)} if metadata else {}
        if rv is None or rv.is_admin:
            return await self.checkpointer.list_threads(status=status, limit=limit,
                                                        before=before, before_id=before_id,
                                                        search=search, top_level=top_level,
                                                        **extra)
        # the store's readers index holds who may read each thread (authz.read_keys)
        return await self.checkpointer.list_threads(status=status, limit=limit, before=before,
                                                    before_id=before_id, search=search,
                                                    readers=reviewer_keys(rv),
                                                    top_level=top_level, **extra)

    async def acount_threads(self, *, status: str | None = None, search: str | None = None,
                             reviewer: Reviewer | str | None = None,
                             top_level: bool = False) -> int | None:
        """How many threads :meth:`alist_threads` lists with these filters, counted from the
        store's indexes. With a ``reviewer`` that is not an admin: None (counting only the
        threads it may read would mean reading every thread)."""
        rv, _ = _reviewer(reviewer)
        if rv is not None and not rv.is_admin:
            return None
        return await self.checkpointer.count_threads(status=status, search=search,
                                                     top_level=top_level)

    async def aiter_threads(self, *, status: str | None = None,
                            page: int = 200) -> AsyncIterator[ThreadRecord]:
        """Every thread (with ``status``), newest first, fetched ``page`` rows at a time."""
        async for row in iter_threads(self.checkpointer.list_threads, status=status, page=page):
            yield row

    async def ajournal(self, thread_id: str) -> list[JournalEntry]:
        return await self.checkpointer.journal(_known(thread_id))

    async def aremembered(self, thread_id: str, *,
                          reviewer: Reviewer | str | None = None) -> list[RememberedApproval]:
        """Standing approvals ("approve and remember") of a thread."""
        return (await self.aget_thread(thread_id, reviewer=reviewer)).remembered

    async def arevoke(
        self, thread_id: str, tool_name: str, *, reviewer: Reviewer | str | None = None
    ) -> bool:
        """Withdraw the remembered approval for ``tool_name``; returns False if there was none.
        ``reviewer`` must be allowed to post to the thread or to decide that tool."""
        rv, _ = _reviewer(reviewer)
        check_input(tool_name, "the tool name")
        return await self._perform(
            thread_id, lambda txn, deps: _decide.revoke(txn, deps, tool_name, rv))

    async def aaudit(
        self, thread_id: str | None = None, *, after_id: int = 0, limit: int = 1000,
        reviewer: Reviewer | str | None = None,
    ) -> list[AuditRecord]:
        """Audit rows in insertion order. With ``reviewer``: only rows of threads it may read
        (one thread it may not read: :class:`NotAuthorized`)."""
        rv, _ = _reviewer(reviewer)
        after_id, limit = _count("after_id", after_id, 0), _count("limit", limit, 1)
        if rv is None or rv.is_admin:
            return await self.checkpointer.audit(thread_id=thread_id and _known(thread_id),
                                                 after_id=after_id, limit=limit)
        if thread_id is not None:
            await self.aget_thread(thread_id, reviewer=rv)
            return await self.checkpointer.audit(thread_id=thread_id, after_id=after_id,
                                                 limit=limit)
        readable: dict[str, bool] = {}
        out: list[AuditRecord] = []
        while len(out) < limit:
            batch = await self.checkpointer.audit(after_id=after_id, limit=limit)
            for r in batch:
                if r.thread_id not in readable:
                    snap = await self.checkpointer.load(r.thread_id)
                    readable[r.thread_id] = snap is not None and may_read(
                        rv, facts_of(snap.thread))
                if readable[r.thread_id]:
                    out.append(r)
            if len(batch) < limit:
                break
            after_id = batch[-1].id or after_id
        return out[:limit]

    async def averify_audit(
        self, thread_id: str | None = None, *, allow_unsigned: bool = False,
        head: AuditHead | None = None,
    ) -> AuditReport:
        """Check the audit log: every signed hash chain and its head, the journal and the
        messages against the signed rows, and — with ``head`` — the log against a head exported
        earlier. Returns the problems found (an empty list: none) with ``unchecked`` saying
        what could not be checked (e.g. no audit key here). ``allow_unsigned`` accepts the
        unsigned rows of a database written before audit rows were signed."""
        return await verify_store(self.checkpointer, thread_id and _known(thread_id),
                                  allow_unsigned=allow_unsigned,
                                  head=head)

    async def aexport_audit_head(self) -> AuditHead:
        """A signed summary of the audit log so far, to keep where the database's users cannot
        write; ``averify_audit(head=...)`` later shows whether anything it covers changed."""
        return await export_head(self.checkpointer, self.clock())

    # ------------------------------------------------------------------ sync wrappers

    def invoke(self, input: Any, *, thread_id: str | None = None,
               config: Mapping[str, Any] | None = None,
               on_stored: Callable[[], None] | None = None,
               reviewer: Reviewer | str | None = None) -> RunResult:
        """Sync form of :meth:`ainvoke`."""
        tid = _thread_of("invoke", thread_id, config)
        return run_blocking(self.ainvoke(input, thread_id=tid, on_stored=on_stored,
                                         reviewer=reviewer), "invoke")

    def resume(
        self, thread_id: str, decisions: Any = None, *, value: Any = _UNSET,
        interrupt_id: str | None = None, reviewer: Reviewer | str | None = None,
        actor: str | None = None, on_stored: Callable[[], None] | None = None,
    ) -> RunResult:
        """Sync form of :meth:`aresume`."""
        return run_blocking(self.aresume(thread_id, decisions, value=value,
                                         interrupt_id=interrupt_id, reviewer=reviewer,
                                         actor=actor, on_stored=on_stored), "resume")

    def stream(self, input: Any, *, thread_id: str | None = None,
               config: Mapping[str, Any] | None = None,
               reviewer: Reviewer | str | None = None) -> Iterator[Event]:
        """Sync form of :meth:`astream`."""
        tid = _thread_of("stream", thread_id, config)
        return iterate_blocking(self.astream(input, thread_id=tid, reviewer=reviewer),
                                "stream")

    def recover(self, thread_id: str) -> RunResult:
        return run_blocking(self.arecover(thread_id), "recover")

    def recover_stale(self) -> list[RunResult]:
        """Sync form of :meth:`arecover_stale`."""
        return run_blocking(self.arecover_stale(), "recover_stale")

    def cancel(self, thread_id: str, *, reason: str | None = None,
               reviewer: Reviewer | str | None = None) -> RunResult:
        return run_blocking(self.acancel(thread_id, reason=reason, reviewer=reviewer), "cancel")

    def expire_due(self) -> list[RunResult]:
        return run_blocking(self.aexpire_due(), "expire_due")

    def get_thread(self, thread_id: str, *,
                   reviewer: Reviewer | str | None = None) -> ThreadState:
        return run_blocking(self.aget_thread(thread_id, reviewer=reviewer), "get_thread")

    def call_outcome(self, thread_id: str, tool_call_id: str, *,
                     reviewer: Reviewer | str | None = None) -> CallOutcome:
        return run_blocking(self.acall_outcome(thread_id, tool_call_id, reviewer=reviewer),
                            "call_outcome")

    def list_threads(self, *, status: str | None = None, limit: int = 50,
                     before: datetime | None = None,
                     before_id: str | None = None,
                     search: str | None = None,
                     reviewer: Reviewer | str | None = None,
                     top_level: bool = False,
                     metadata: Mapping[str, Any] | None = None) -> list[ThreadRecord]:
        return run_blocking(self.alist_threads(status=status, limit=limit, before=before,
                                               before_id=before_id, search=search,
                                               reviewer=reviewer, top_level=top_level,
                                               metadata=metadata),
                            "list_threads")

    def count_threads(self, *, status: str | None = None, search: str | None = None,
                      reviewer: Reviewer | str | None = None,
                      top_level: bool = False) -> int | None:
        """Sync form of :meth:`acount_threads`."""
        return run_blocking(self.acount_threads(status=status, search=search,
                                                reviewer=reviewer, top_level=top_level),
                            "count_threads")

    def iter_threads(self, *, status: str | None = None, page: int = 200,
                     ) -> Iterator[ThreadRecord]:
        """Sync form of :meth:`aiter_threads`."""
        return iterate_blocking(self.aiter_threads(status=status, page=page), "iter_threads")

    def journal(self, thread_id: str) -> list[JournalEntry]:
        return run_blocking(self.ajournal(thread_id), "journal")

    def remembered(self, thread_id: str, *,
                   reviewer: Reviewer | str | None = None) -> list[RememberedApproval]:
        return run_blocking(self.aremembered(thread_id, reviewer=reviewer), "remembered")

    def revoke(self, thread_id: str, tool_name: str, *,
               reviewer: Reviewer | str | None = None) -> bool:
        return run_blocking(self.arevoke(thread_id, tool_name, reviewer=reviewer), "revoke")

    def audit(self, thread_id: str | None = None, *, after_id: int = 0, limit: int = 1000,
              reviewer: Reviewer | str | None = None) -> list[AuditRecord]:
        return run_blocking(self.aaudit(thread_id, after_id=after_id, limit=limit,
                                        reviewer=reviewer), "audit")

    def verify_audit(self, thread_id: str | None = None, *, allow_unsigned: bool = False,
                     head: AuditHead | None = None) -> AuditReport:
        return run_blocking(self.averify_audit(thread_id, allow_unsigned=allow_unsigned,
                                               head=head), "verify_audit")

    def export_audit_head(self) -> AuditHead:
        return run_blocking(self.aexport_audit_head(), "export_audit_head")

    async def aclose(self) -> None:
        """Close the tool sources (e.g. stop MCP servers) and the checkpointer. The run of a
        stream whose consumer left without closing it is cancelled, and a tool still running
        after its run was cancelled (Ctrl-C in a blocking call, a stream left early) is waited
        for first, up to ``CLOSE_WAIT`` seconds, so that its outcome is stored rather than
        left to be declared unknown."""
        streamed = [t for t in self._streamed if not t.done()]
        for task in streamed:  # a stream its consumer left without closing it
            if not task.cancelling():
                task.cancel()
        if streamed:
            await asyncio.wait(streamed, timeout=CLOSE_WAIT)
        left = await finish_pending(CLOSE_WAIT)
        if left:
            log.warning("closing with %d tool call(s) of cancelled runs still running: their "
                        "outcomes are unknown to this process; recovery will ask about them",
                        left)
        for source in self.tool_sources:
            await source.aclose()
        await self.checkpointer.close()

    def close(self) -> None:
        run_blocking(self.aclose(), "close")

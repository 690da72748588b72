"""The exception tree of interlock.

::

    InterlockError
    ├── ConfigurationError        bad Agent / policy / tool configuration (fix the code)
    │   └── SubAgentMismatch      a sub-agent (Agent.as_tool) on another checkpointer
    ├── MissingDependency         an optional extra is not installed
    ├── ThreadNotFound            no thread with that id
    ├── CallNotFound              the thread has no tool call with that id
    ├── ThreadInterrupted         new input sent while the thread waits for a decision
    ├── ResumeError               a resume that cannot be applied
    │   ├── NoPendingInterrupt    nothing waits for a decision
    │   ├── StaleInterrupt        the interrupt id given is not the pending one
    │   └── InvalidDecision       the decisions do not fit the pending request
    ├── ConcurrencyError          another process or reviewer changed the thread first
    │   ├── InterruptConflict     another resume of the same interrupt won
    │   │   ├── StaleRevision     the decision was made for an earlier revision of the call
    │   │   ├── PositionTaken     an unkeyed response would skip to a call its sender was not shown
    │   │   ├── UnseenRequest     an unkeyed response would decide a request its sender never saw
    │   │   └── CallSettled       the call named was settled before (expired, decided, cancelled)
    │   ├── ThreadBusy            another process is advancing the thread right now
    │   └── VersionConflict       a store's compare-and-set lost: the thread's version moved
    ├── SubAgentThread            the thread belongs to a sub-agent: act on its parent
    ├── RunLimitExceeded          the model kept calling tools past ``max_turns``
    ├── ModelError                the model provider failed; the thread is unchanged
    ├── NotAuthorized             a reviewer without the required role
    ├── InvalidText               input with NUL / lone surrogates, or a malformed thread id
    └── StorageError              the store is unusable (e.g. schema newer than this code)

Every message says what was wrong, which thread / tool call it concerns and what to do instead.

:class:`InterlockWarning` (a ``UserWarning``) flags configuration that works but is probably a
mistake, e.g. a tool without a docstring (the model sees no description).
"""

from __future__ import annotations


class InterlockError(Exception):
    """Base class of every error raised by interlock."""


class InterlockWarning(UserWarning):
    """Configuration that works but is probably a mistake; the message says how to fix it."""


class ConfigurationError(InterlockError, ValueError):
    """The agent, a tool or a policy is configured wrongly."""


class SubAgentMismatch(ConfigurationError):
    """An agent used as a tool (``Agent.as_tool``) must keep its threads in the same
    checkpointer as the agent that calls it."""


class MissingDependency(InterlockError, ImportError):
    """An optional dependency (extra) is needed for this feature."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        super().__init__(
            f"{feature} needs the optional dependency {module!r}, which is not installed. "
            f"Install it: pip install -e '.[{extra}]' in your interlock checkout, or "
            f"pip install 'dist/interlock-<version>-py3-none-any.whl[{extra}]' for a built "
            f"wheel."
        )
        self.extra = extra


IN_MEMORY_NOTE = (
    "This agent keeps its threads in memory (MemoryCheckpointer, the default when Agent(...) "
    "gets no checkpointer), so a thread started by another process, or before a restart, is "
    "not here. Give the agent a durable store: Agent(..., "
    "checkpointer=SqliteCheckpointer('interlock.db')) or PostgresCheckpointer(dsn).")


class ThreadNotFound(InterlockError, LookupError):
    """No thread with the given id exists in the checkpointer."""

    def __init__(self, thread_id: str, *, in_memory: bool = False) -> None:
        text = (f"Thread {thread_id!r} does not exist in this checkpointer. Start it with "
                f"agent.invoke(message, thread_id={thread_id!r}) or check the id and the "
                f"database.")
        if in_memory:
            text += " " + IN_MEMORY_NOTE
        super().__init__(text)
        self.thread_id = thread_id
        self.in_memory = in_memory


class CallNotFound(InterlockError, LookupError):
    """The thread has no tool call with the given id."""

    def __init__(self, thread_id: str, tool_call_id: str) -> None:
        super().__init__(
            f"Thread {thread_id!r} has no tool call {tool_call_id!r}. Check the id: the "
            f"thread's calls are listed by get_thread(...).journal (GET "
            f"/api/threads/{{thread_id}} over HTTP)."
        )
        self.thread_id = thread_id
        self.tool_call_id = tool_call_id


class ThreadInterrupted(InterlockError):
    """New input was sent to a thread that waits for a reviewer's decision."""

    def __init__(self, thread_id: str, interrupt_ids: list[str]) -> None:
        super().__init__(
            f"Thread {thread_id!r} is waiting for a decision on interrupt(s) "
            f"{', '.join(interrupt_ids)}; it cannot take a new message now. Resolve it with "
            f"agent.resume({thread_id!r}, decisions=[...]) or close it with "
            f"agent.cancel({thread_id!r}, reason=...)."
        )
        self.thread_id = thread_id
        self.interrupt_ids = interrupt_ids


class ResumeError(InterlockError):
    """A resume could not be applied."""


class NoPendingInterrupt(ResumeError):
    """Resume was called on a thread that is not waiting for anything."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(
            f"Thread {thread_id!r} has no pending interrupt, so there is nothing to resume. "
            f"Send a new message with agent.invoke(..., thread_id={thread_id!r}) instead."
        )
        self.thread_id = thread_id


class StaleInterrupt(ResumeError):
    """The interrupt id given is not (or no longer) pending on the thread."""

    def __init__(self, thread_id: str, interrupt_id: str, pending: list[str]) -> None:
        now = ", ".join(pending) if pending else "none"
        if not interrupt_id:  # the resume named none, and what it would answer changed
            super().__init__(
                f"The resume of thread {thread_id!r} names no interrupt_id, and the request it "
                f"would answer is not the one pending now (the thread was recovered, or its "
                f"requests were answered or expired meanwhile). Pending interrupt ids: {now}. "
                f"Reload the thread and pass interrupt_id=... of the request you answer."
            )
        else:
            super().__init__(
                f"Interrupt {interrupt_id!r} is not pending on thread {thread_id!r} (it was "
                f"already answered, cancelled or expired). Pending interrupt ids: {now}. "
                f"Reload the thread and answer the current request."
            )
        self.thread_id = thread_id
        self.interrupt_id = interrupt_id
        self.pending = pending


class InvalidDecision(ResumeError, ValueError):
    """The decisions do not fit the pending request. Nothing was stored."""

    def __init__(self, thread_id: str, problem: str) -> None:
        super().__init__(
            f"Invalid decision for thread {thread_id!r}: {problem} Nothing was changed; "
            f"the same request can be answered again."
        )
        self.thread_id = thread_id
        self.problem = problem


class ConcurrencyError(InterlockError):
    """Another writer changed the thread first."""


class VersionConflict(ConcurrencyError):
    """A checkpointer's compare-and-set failed: the thread's stored version was not the
    expected one (someone else committed first), so the change was not stored. Raised by
    :meth:`Checkpointer.commit <interlock.storage.Checkpointer.commit>`; the run engine turns
    it into :class:`ThreadBusy` or :class:`InterruptConflict`, so only code that commits to a
    store itself sees it."""

    def __init__(self, thread_id: str, expected: int | None) -> None:
        super().__init__(
            f"Thread {thread_id!r} changed concurrently (expected version {expected}); "
            f"the change was not stored. Load the thread again and redo the change on the "
            f"new version."
        )
        self.thread_id = thread_id
        self.expected = expected


class InterruptConflict(ConcurrencyError):
    """Another resume of the same interrupt was stored first; this one was not applied."""

    def __init__(self, thread_id: str, interrupt_id: str | None = None) -> None:
        which = f"interrupt {interrupt_id!r}" if interrupt_id else "the pending interrupt"
        super().__init__(
            f"Another resume of {which} on thread {thread_id!r} was stored first (another "
            f"reviewer, process or a double submit). This resume was not applied and nothing "
            f"ran twice. Reload the thread to see the outcome."
        )
        self.thread_id = thread_id
        self.interrupt_id = interrupt_id


def _about_call(exc: InterruptConflict, message: str, thread_id: str,
                tool_call_id: str) -> None:
    """Initialise a conflict about one tool call (not about a whole interrupt)."""
    ConcurrencyError.__init__(exc, message)
    exc.thread_id = thread_id
    exc.interrupt_id = None
    setattr(exc, "tool_call_id", tool_call_id)  # noqa: B010 (declared by each class)


class PositionTaken(InterruptConflict):
    """A response sent without an interrupt id answers "the first pending call", and another
    reviewer decided the call(s) before it since: the call it would now decide is not the one
    its sender was shown. Nothing was stored."""

    tool_call_id: str

    def __init__(self, thread_id: str, tool_call_id: str, name: str,
                 decided: list[tuple[str, str, str]], lg_id: str) -> None:
        what = "; ".join(f"call {cid!r} ({tool}) was decided by {who!r}"
                         for cid, tool, who in decided)
        _about_call(
            self, f"This response names no interrupt id, so it answers the first pending call of "
            f"thread {thread_id!r} in order; but {what} since, so it would now decide call "
            f"{tool_call_id!r} ({name}), which you may not have been shown. Nothing was "
            f"stored. Reload the thread and answer the call you review keyed by its interrupt "
            f"id ({{{lg_id!r}: response}}).", thread_id, tool_call_id)


class UnseenRequest(InterruptConflict):
    """A response sent without an interrupt id answers the calls pending now by position, and
    the thread has moved on to a request its sender has not been shown since they last read the
    thread (another reviewer answered what they were shown and the agent asked about a new
    call, or their own earlier answer did). Nothing was stored or run."""

    tool_call_id: str

    def __init__(self, thread_id: str, tool_call_id: str, name: str,
                 interrupt_id: str) -> None:
        _about_call(
            self, f"This response names no interrupt id, so it would decide the call pending "
            f"now on thread {thread_id!r} by its position: call {tool_call_id!r} ({name}) of "
            f"request {interrupt_id!r}. But that request was raised after you last read the "
            f"thread, and you have not been shown it since. Nothing was stored or run. Read "
            f"the thread again and answer what it shows, or key your answer by the interrupt "
            f"id of the call you review (or send the checkpoint you read with it).",
            thread_id, tool_call_id)


class CallSettled(InterruptConflict):
    """The decision names a call that is no longer waiting for one: it expired, another
    reviewer decided it, or its thread was cancelled, before this decision arrived. Nothing
    was stored."""

    tool_call_id: str

    def __init__(self, thread_id: str, tool_call_id: str, name: str, state: str,
                 by: str | None) -> None:
        how = {
            "expired": "it expired: no reviewer decided before its deadline",
            "cancelled": "its thread was cancelled",
            "rejected": "it was rejected",
            "responded": "it was answered without running",
            "running": "it was approved and is running",
            "waiting": "it was approved and is running",
            "interrupted": "it was approved and is running",
            "succeeded": "it was approved and has run",
            "failed": "it was approved and has run (it failed)",
            "unknown": "it was approved and its outcome is unknown",
        }.get(state, "it was approved")
        who = f" (by {by!r})" if by and state != "expired" else ""
        _about_call(
            self, f"Call {tool_call_id!r} ({name}) of thread {thread_id!r} no longer waits for a "
            f"decision: {how}{who}. This decision was not stored and nothing ran because of "
            f"it. Reload the thread to see the outcome.", thread_id, tool_call_id)
        self.state = state


class StaleRevision(InterruptConflict):
    """The decision names a revision of the call that is no longer the current one (someone
    edited the call since the reviewer saw it), or names none for a call that was edited.
    Nothing was stored."""

    tool_call_id: str

    def __init__(self, thread_id: str, tool_call_id: str, *, given: int | None, current: int,
                 edited_by: str | None, now_runs: str) -> None:
        shown = (f"revision {given}" if given is not None else
                 "no revision (accepted only for a call that was never edited)")
        _about_call(
            self, f"The decision for call {tool_call_id!r} on thread {thread_id!r} was made for "
            f"{shown}, but {edited_by or 'a reviewer'!r} edited the call since then: revision "
            f"{current} would now run {now_runs}. Nothing was stored. Reload the request, "
            f"check the call that would run now and decide again (with 'revision': {current}).",
            thread_id, tool_call_id)
        self.given = given
        self.current = current
        self.edited_by = edited_by


class ThreadBusy(ConcurrencyError):
    """Another live process is advancing the thread."""

    def __init__(self, thread_id: str, owner: str, *, here: bool = False) -> None:
        if owner == "queued":
            text = (f"Thread {thread_id!r} has a run waiting on the run queue for a worker "
                    f"process (interlock worker), or one that just started there. Wait for "
                    f"it to pause or finish and try again.")
        elif here:
            text = (f"Thread {thread_id!r} is being advanced by another run in this process "
                    f"({owner}). Wait for that run to finish and try again.")
        else:
            text = (f"Thread {thread_id!r} is being advanced by another process ({owner}). "
                    f"Wait for that run to finish (or for its lease to expire if it died) and "
                    f"try again.")
        super().__init__(text)
        self.thread_id = thread_id
        self.owner = owner
        self.here = here


class SubAgentThread(InterlockError):
    """The thread is run by a sub-agent (``Agent.as_tool``) for a call of another thread:
    it is started, decided, cancelled and recovered through that parent thread."""

    def __init__(self, thread_id: str, parent_id: str, tool_call_id: str, problem: str,
                 ) -> None:
        super().__init__(
            f"Thread {thread_id!r} is a sub-agent's thread, run for call {tool_call_id!r} of "
            f"thread {parent_id!r}: {problem}"
        )
        self.thread_id = thread_id
        self.parent_id = parent_id


class RunLimitExceeded(InterlockError):
    """A run made more model calls than the agent's ``max_turns``."""


class ModelError(InterlockError):
    """The model provider returned an error. The thread state is unchanged; retry the run."""

    def __init__(self, message: str, *, provider: str = "model", status_code: int | None = None):
        super().__init__(f"{provider} error: {message}")
        self.provider = provider
        self.status_code = status_code
        self.provider_message = message


class NotAuthorized(InterlockError, PermissionError):
    """The reviewer lacks a role required to decide on this request."""


class StorageError(InterlockError):
    """The checkpointer could not read or store something: the message names the cause (disk
    full, database locked or read-only, server unreachable, schema newer than this code, a
    value it cannot encode) and what to do. A run that hits it stops; its thread is recovered
    by the next call on it (see docs/durability.md)."""

    maybe_stored: bool = True
    """Whether the failed write may have been stored all the same (a connection lost during
    its COMMIT): False only where the store knows nothing of it was stored."""


class InvalidText(InterlockError, ValueError):
    """Input that cannot be stored: text with a NUL character or a lone surrogate, or a new
    thread id outside the documented charset. Nothing was stored."""

    def __init__(self, where: str, problem: str, fix: str | None = None) -> None:
        fix = fix or ("Text with NUL characters or lone surrogates cannot be stored: remove "
                      "them (send binary data encoded, e.g. as base64) and try again.")
        super().__init__(f"{where} {problem}. {fix} Nothing was stored.")
        self.where = where
        self.problem = problem


def in_other_terms(exc: InterlockError, *, not_found: str, no_pending: str,
                   waiting: str) -> str:
    """``exc``'s message for a surface that is not Python code (the command line, an HTTP
    client): the core's advice names Python methods (``agent.invoke(...)``), the surface names
    what does the same there. ``not_found`` replaces the message of :class:`ThreadNotFound`,
    ``no_pending`` that of :class:`NoPendingInterrupt`, ``waiting`` that of
    :class:`ThreadInterrupted`; each is a :meth:`str.format` template of ``thread`` (the
    thread id) and ``interrupts`` (the ids of what waits). Any other error keeps its
    message."""
    if isinstance(exc, ThreadNotFound):
        template = not_found
    elif isinstance(exc, NoPendingInterrupt):
        template = no_pending
    elif isinstance(exc, ThreadInterrupted):
        template = waiting
    else:
        return str(exc)
    return template.format(thread=exc.thread_id,
                           interrupts=", ".join(getattr(exc, "interrupt_ids", ())))

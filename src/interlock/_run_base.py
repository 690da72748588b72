"""The state of one run: the loaded thread, staged changes and the commit that stores them."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ._summary import summary_updates
from ._texts import (
    public_interrupt,
)
from .audit import GENESIS, make_record
from .decisions import (
    PendingCall,
    Reviewer,
)
from .errors import (
    InterlockError,
    ThreadBusy,
    ThreadNotFound,
)
from .events import (
    Event,
)
from .hitl import ActionRequest, HITLRequest, ReviewConfig
from .interrupts import Interrupt
from .leases import owner_alive
from .messages import AssistantMessage, Message
from .result import RunResult
from .storage.base import (
    Commit,
    JournalEntry,
    ThreadRecord,
    ThreadSnapshot,
    VersionConflict,
)

if TYPE_CHECKING:
    from .agent import Agent

Sink = Callable[[Event], Awaitable[None]]
AuditItem = tuple[str, str, str | None, dict[str, Any]]  # kind, actor, tool_call_id, data



@dataclass
class ResumeSpec:
    decisions: Any = None
    values: dict[str, Any] | None = None
    """interrupt id -> answer, for input interrupts."""
    value: Any = None
    has_value: bool = False
    interrupt_id: str | None = None
    reviewer: Reviewer | None = None
    actor: str = "local"
    command: Any = None
    has_command: bool = False


class RunBase:
    """One invocation on one thread: state, staging and storing (see :class:`Run`)."""

    def __init__(self, agent: Agent, thread_id: str, sink: Sink | None = None) -> None:
        self.agent = agent
        self.store = agent.checkpointer
        self.thread_id = thread_id
        self.sink = sink
        self.snap: ThreadSnapshot | None = None
        self.model_calls = 0
        self._conflict: Callable[[], InterlockError] = self._busy
        self._stored_version: int | None = None
        """Version of the thread row in the store (None: not created yet)."""
        self._staged_messages: list[Message] = []
        self._staged_journal: dict[str, JournalEntry] = {}
        self._staged_audit: list[AuditItem] = []
        self.on_accepted: Callable[[], None] | None = None
        """Called once the new input or the decisions are durably stored, before the loop
        continues (the review server answers the HTTP request at that point)."""

    def _accepted(self) -> None:
        if self.on_accepted is not None:
            self.on_accepted()

    # ------------------------------------------------------------------ basics

    def _busy(self) -> InterlockError:
        return ThreadBusy(self.thread_id, "another writer")

    @property
    def s(self) -> ThreadSnapshot:
        assert self.snap is not None
        return self.snap

    @property
    def t(self) -> ThreadRecord:
        return self.s.thread

    def now(self) -> datetime:
        return self.agent.clock()

    async def emit(self, event: Event) -> None:
        if self.sink is not None:
            await self.sink(event)

    def stage(
        self,
        *,
        messages: Sequence[Message] = (),
        journal: Sequence[JournalEntry] = (),
        audit: Sequence[AuditItem] = (),
        **updates: Any,
    ) -> None:
        """Apply a change to the in-memory thread; it is stored by the next :meth:`flush`.

        Only steps that nobody has been told about yet are staged (the model's reply before its
        calls are classified, a new message before the run answers): a crash loses them, and
        the next run simply redoes them.
        """
        s = self.s
        t = s.thread
        new = t.model_copy(update={**updates, "message_count": t.message_count + len(messages)})
        s.thread = new
        s.messages.extend(messages)
        self._staged_messages.extend(messages)
        if new.turn != t.turn:
            s.journal = {}
        for e in journal:
            self._staged_journal[e.tool_call_id] = e
            if e.turn == new.turn:
                s.journal[e.tool_call_id] = e
        self._staged_audit.extend(audit)

    async def flush(self, *, hold_lease: bool = True) -> None:
        """Store everything staged in one atomic compare-and-set commit."""
        t = self.t
        now = self.now()
        seq, prev = t.audit_seq, t.audit_hash or GENESIS
        records = []
        for kind, actor, call_id, data in self._staged_audit:
            seq += 1
            rec = make_record(thread_id=t.thread_id, seq=seq, prev_hash=prev, ts=now, kind=kind,
                              actor=actor, tool_call_id=call_id, data=data)
            prev = rec.hash
            records.append(rec)
        lease = (
            {"lease_owner": self.agent.owner, "lease_until": now + self.agent.lease}
            if hold_lease else {"lease_owner": None, "lease_until": None}
        )
        expected = self._stored_version
        summary = summary_updates(
            last_decision=t.last_decision, outcome=t.outcome, status=t.status, error=t.error,
            messages=self._staged_messages, audit=self._staged_audit)
        new = t.model_copy(update={
            **lease, **summary, "version": (expected or 0) + 1, "updated_at": now,
            "audit_seq": seq, "audit_hash": prev,
        })
        try:
            await self.store.commit(
                Commit(thread=new, messages=self._staged_messages,
                       journal=list(self._staged_journal.values()), audit=records),
                expected_version=expected,
            )
        except VersionConflict:
            raise self._conflict() from None
        self.s.thread = new
        self._stored_version = new.version
        self._staged_messages = []
        self._staged_journal = {}
        self._staged_audit = []

    async def commit(
        self,
        *,
        messages: Sequence[Message] = (),
        journal: Sequence[JournalEntry] = (),
        audit: Sequence[AuditItem] = (),
        hold_lease: bool = True,
        **updates: Any,
    ) -> None:
        """Stage a change and store it (with anything staged before) in one commit."""
        self.stage(messages=messages, journal=journal, audit=audit, **updates)
        await self.flush(hold_lease=hold_lease)

    # ------------------------------------------------------------------ loading

    async def load(self, *, create: bool = False) -> bool:
        """Load the thread. Returns True when it needs recovery (crashed or failed mid-run)."""
        snap = await self.store.load(self.thread_id)
        if snap is None:
            if not create:
                raise ThreadNotFound(self.thread_id)
            now = self.now()
            self.snap = ThreadSnapshot(
                thread=ThreadRecord(thread_id=self.thread_id, created_at=now, updated_at=now,
                                    version=0),
                messages=[],
                journal={},
            )
            return False
        self.snap = snap
        self._stored_version = snap.thread.version
        t = snap.thread
        if t.status == "running":
            owner = t.lease_owner
            if owner and owner_alive(owner, t.lease_until, self.now(), self.thread_id):
                raise ThreadBusy(self.thread_id, owner)
            return True
        return t.status == "failed" and t.turn is not None

    # ------------------------------------------------------------------ the loop

    def result_now(self) -> RunResult:
        t = self.t
        messages = list(self.s.messages)
        if t.pending:
            return RunResult(self.thread_id, "interrupted", messages,
                             [public_interrupt(i) for i in t.pending])
        last = messages[-1] if messages else None
        output = last.content if isinstance(last, AssistantMessage) and not last.tool_calls \
            else None
        return RunResult(self.thread_id, "completed", messages, [], output)

    async def finish_interrupted(self) -> RunResult:
        if self.t.status != "interrupted" or self.t.lease_owner is not None:
            await self.commit(status="interrupted", hold_lease=False)
        return self.result_now()

    # ------------------------------------------------------------------ one turn

    def _turn_message(self) -> AssistantMessage:
        assert self.t.turn is not None
        msg = self.s.messages[self.t.turn]
        assert isinstance(msg, AssistantMessage)
        return msg

    def _pending_calls(self, review: Interrupt) -> list[PendingCall]:
        req = HITLRequest.model_validate(review.value)
        return [PendingCall(a, c) for a, c in
                zip(req.action_requests, req.review_configs, strict=True)]

    def _schema(self, name: str) -> dict[str, Any]:
        tool = self.agent.tools_by_name.get(name)
        return dict(tool.args_schema) if tool else {}

    def _merge_review(
        self, pending: list[Interrupt], reviews: list[tuple[ActionRequest, ReviewConfig]]
    ) -> Interrupt | None:
        """One review interrupt per turn: new gated calls join any that is already pending."""
        if not reviews:
            return None
        existing = next((i for i in pending if i.kind == "review"), None)
        pairs = list(reviews)
        if existing is not None:
            old = self._pending_calls(existing)
            pairs = [(c.request, c.config) for c in old] + pairs
        order = {c.id: n for n, c in enumerate(self._turn_message().tool_calls)}
        pairs.sort(key=lambda p: order.get(p[0].tool_call_id, 0))
        req = HITLRequest(action_requests=[a for a, _ in pairs],
                          review_configs=[c for _, c in pairs])
        return Interrupt(id=uuid.uuid4().hex, kind="review", value=req.to_json(),
                         created_at=self.now())

    async def loop(self) -> RunResult:
        """Continue the run until it completes or must wait (defined by :class:`Run`)."""
        raise NotImplementedError

"""Running tool calls under the journal: ``running`` before the call, the result with
``succeeded`` / ``failed``; recovery of calls whose outcome is unknown."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from inspect import isawaitable
from typing import TYPE_CHECKING, Any

from ._run_base import AuditItem, RunBase
from ._texts import (
    RESULT_PREVIEW,
    SYSTEM,
    UNKNOWN_OUTCOME,
    digest,
    edit_notice,
    idempotency_key,
    public_interrupt,
)
from .errors import (
    InterlockError,
)
from .events import (
    InterruptRaised,
    ToolFinished,
    ToolStarted,
)
from .hitl import ActionRequest, ReviewConfig
from .interrupts import Interrupt, PauseRun, enter_scope, exit_scope
from .messages import AssistantMessage, ToolCall, ToolMessage
from .middleware import (
    Middleware,
    ToolCallHandler,
    ToolCallRequest,
)
from .storage.base import (
    FINAL_STATES,
    CallState,
    JournalEntry,
)
from .tools import ArgumentError, ToolContext, ToolError, result_to_text

if TYPE_CHECKING:
    pass




class ExecutionSteps(RunBase):
    async def handle_unknown(self, message: AssistantMessage) -> None:
        """Calls whose outcome is unknown after a crash: retry idempotent tools, ask otherwise."""
        unknown = [self.s.journal[c.id] for c in message.tool_calls
                   if self.s.journal[c.id].state == CallState.UNKNOWN]
        if not unknown:
            return
        now = self.now()
        entries: list[JournalEntry] = []
        audit: list[AuditItem] = []
        reviews: list[tuple[ActionRequest, ReviewConfig]] = []
        for e in unknown:
            tool = self.agent.tools_by_name.get(e.exec_name or e.name)
            if tool is not None and tool.idempotent:
                entries.append(e.model_copy(update={
                    "state": e.paused_from or self._runnable_state(e), "updated_at": now}))
                audit.append(("retry_idempotent", SYSTEM, e.tool_call_id,
                              {"name": tool.name, "attempts": e.attempts}))
                continue
            name = e.exec_name or e.name
            args = e.exec_args if e.exec_args is not None else e.args
            allowed: list[Any] = ["approve", "reject", "respond"]
            entries.append(e.model_copy(update={
                "state": CallState.PENDING_REVIEW, "updated_at": now,
                "review": {"kind": "review", "allowed_decisions": allowed,
                           "description": UNKNOWN_OUTCOME, "reason": "outcome_unknown"}}))
            # the reviewer decides on what actually ran (the edited call, if it was edited)
            reviews.append((
                ActionRequest(tool_call_id=e.tool_call_id, name=name, args=args,
                              description=f"{UNKNOWN_OUTCOME}. Tool: {name}\nArgs: "
                              f"{json.dumps(args, ensure_ascii=False)}\napprove = run it again, "
                              f"reject = do not run it again, respond = give the result you "
                              f"know.", reason="outcome_unknown"),
                ReviewConfig(action_name=name, allowed_decisions=allowed,
                             args_schema=self._schema(name)),
            ))
        pending = list(self.t.pending)
        new_intr = self._merge_review(pending, reviews)
        if new_intr is not None:
            audit.append(("request_raised", SYSTEM, None, {
                "interrupt_id": new_intr.id, "reason": "outcome_unknown",
                "calls": [{"tool_call_id": a.tool_call_id, "name": a.name,
                           "args_sha256": digest(a.args)} for a, _ in reviews]}))
            pending = [i for i in pending if i.kind != "review"] + [new_intr]
        await self.commit(journal=entries, audit=audit, pending=pending)
        if new_intr is not None:
            await self.emit(InterruptRaised(self.thread_id, public_interrupt(new_intr)))

    @staticmethod
    def _runnable_state(e: JournalEntry) -> CallState:
        if e.decision and e.decision.get("type") == "edit":
            return CallState.EDITED
        if e.decided_by and e.decided_by.startswith("rule:"):
            return CallState.AUTO_APPROVED
        return CallState.APPROVED

    async def execute(self, e: JournalEntry) -> None:
        name = e.exec_name or e.name
        args = e.exec_args if e.exec_args is not None else e.args
        original = ToolCall(id=e.tool_call_id, name=e.name, args=e.args)
        call = ToolCall(id=e.tool_call_id, name=name, args=args)
        edited = e.state == CallState.EDITED
        attempt = e.attempts + 1
        running = e.model_copy(update={"state": CallState.RUNNING, "attempts": attempt,
                                       "paused_from": e.state, "updated_at": self.now()})
        await self.commit(journal=[running], audit=[("tool_started", SYSTEM, e.tool_call_id, {
            "name": name, "args_sha256": digest(args), "attempt": attempt})])
        await self.emit(ToolStarted(self.thread_id, call))
        tool = self.agent.tools_by_name.get(name)
        request = ToolCallRequest(
            thread_id=self.thread_id, call=call, original=original, tool=tool,
            context=ToolContext(thread_id=self.thread_id, tool_call_id=e.tool_call_id,
                                idempotency_key=idempotency_key(self.thread_id, e.tool_call_id),
                                attempt=attempt),
        )
        token = enter_scope(e.answers)
        try:
            msg = await self.agent.tool_handler(request)
        except PauseRun as pause:
            intr = Interrupt(id=uuid.uuid4().hex, kind="input", value=pause.value,
                             created_at=self.now(), tool_call_id=e.tool_call_id, origin="tool")
            waiting = running.model_copy(update={"state": CallState.INTERRUPTED,
                                                 "paused_from": e.state,
                                                 "updated_at": self.now()})
            await self.commit(journal=[waiting], pending=[*self.t.pending, intr], audit=[
                ("input_requested", SYSTEM, e.tool_call_id,
                 {"interrupt_id": intr.id, "origin": "tool", "value": pause.value})])
            await self.emit(InterruptRaised(self.thread_id, public_interrupt(intr)))
            return
        finally:
            exit_scope(token)
        content = msg.content
        if edited:
            content = edit_notice(name, args) + content
        msg = ToolMessage(tool_call_id=e.tool_call_id, name=name, content=content,
                          status=msg.status, decision="edit" if edited else msg.decision)
        state = CallState.SUCCEEDED if msg.status == "success" else CallState.FAILED
        done = running.model_copy(update={"state": state, "result": msg, "paused_from": None,
                                          "updated_at": self.now()})
        # When this was the last open call of the turn, the tool messages are appended and the
        # turn is closed in the same commit as the result (advance_turn would do it next).
        calls = self._turn_message().tool_calls
        entries = [done if c.id == e.tool_call_id else self.s.journal[c.id] for c in calls]
        close: dict[str, Any] = {}
        if all(x.state in FINAL_STATES and x.result is not None for x in entries):
            close = {"messages": [x.result for x in entries], "turn": None, "hooks": None}
        await self.commit(journal=[done], audit=[("tool_finished", SYSTEM, e.tool_call_id, {
            "name": name, "status": msg.status, "result": msg.content[:RESULT_PREVIEW],
            "result_chars": len(msg.content), "result_sha256": digest(msg.content)})], **close)
        await self.emit(ToolFinished(self.thread_id, msg))


def middleware_name(mw: object) -> str:
    name = getattr(mw, "name", None)
    return name if isinstance(name, str) else type(mw).__name__


async def invoke_tool(request: ToolCallRequest) -> ToolMessage:
    """The innermost tool handler: validate the arguments and call the tool."""
    call = request.call
    tool = request.tool
    if tool is None:
        return ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                           content=f"Tool {call.name!r} does not exist.")
    if call.args_error is not None:
        return ToolMessage(
            tool_call_id=call.id, name=call.name, status="error",
            content=f"The arguments for tool {call.name!r} could not be parsed "
            f"({call.args_error}). The tool was not run; call it again with a JSON object.")
    try:
        value = await tool.run(call.args, request.context)
    except ArgumentError as exc:
        return ToolMessage(
            tool_call_id=call.id, name=call.name, status="error",
            content=f"Invalid arguments for tool {call.name!r}: {'; '.join(exc.errors)}. "
            f"The tool was not run; fix the arguments and call it again.")
    except ToolError as exc:
        return ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                           content=exc.message)
    except Exception as exc:
        return ToolMessage(tool_call_id=call.id, name=call.name, status="error",
                           content=f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}")
    return ToolMessage(tool_call_id=call.id, name=call.name, content=result_to_text(value))


def build_tool_handler(middleware: Sequence[object]) -> ToolCallHandler:
    """Compose ``wrap_tool_call`` hooks, the first middleware outermost."""
    handler: ToolCallHandler = invoke_tool
    for mw in reversed(middleware):
        wrap = getattr(mw, "wrap_tool_call", None)
        if wrap is None or getattr(type(mw), "wrap_tool_call", None) is Middleware.wrap_tool_call:
            continue  # no hook, or the base class's pass-through

        def make(w: Any, nxt: ToolCallHandler, owner: object = mw) -> ToolCallHandler:
            async def h(req: ToolCallRequest) -> ToolMessage:
                out = w(req, nxt)
                result = await out if isawaitable(out) else out
                if not isinstance(result, ToolMessage):
                    raise InterlockError(
                        f"{type(owner).__name__}.wrap_tool_call returned {type(result).__name__}; "
                        f"it must return the ToolMessage from call_next(request) (or its own).")
                return result
            return h

        handler = make(wrap, handler)
    return handler

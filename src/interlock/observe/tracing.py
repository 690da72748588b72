"""OpenTelemetry traces of runs (the ``[otel]`` extra).

Spans follow the OpenTelemetry GenAI semantic conventions where they apply:

* ``invoke_agent {agent}``: one per engine operation on a thread (a start, a resume, a
  recovery, ...). The first one of a run is the trace's root; its ``traceparent`` is stored
  with the thread (``ThreadRecord.trace``), and every later operation on the run, in any
  process, is its child. A sub-agent's first span is a child of the parent's tool span.
* ``chat {model}``: a model call (``gen_ai.request.model``, ``gen_ai.usage.*_tokens``).
* ``execute_tool {tool}``: a tool call (``gen_ai.tool.name``, ``gen_ai.tool.call.id``).
* ``await_review {tool}`` / ``await_input``: the wait for a person, from the pause to the
  decision (``interlock.reviewer``, ``interlock.decision.type``, the request's revision when it
  has one), recorded when the decision is stored.

Arguments and results are recorded only with ``record_content=True``, shown by the display
policy (:mod:`interlock.display`: invisible characters escaped) and cut to ``content_limit``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ..audit.records import AuditKind
from ..display import visible
from ..messages import AssistantMessage, Message, ToolMessage
from ..tools import Tool

if TYPE_CHECKING:
    from ..middleware import ToolCallHandler, ToolCallRequest
    from ..models.base import Model
    from ..storage.base import AuditRecord, ThreadRecord

log = logging.getLogger("interlock.observe")
_PROPAGATOR = TraceContextTextMapPropagator()
_WAIT_ENDS = {AuditKind.DECISION.value: None, AuditKind.INPUT_ANSWERED.value: "answer",
              AuditKind.EXPIRED.value: "expire"}


def _ns(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000_000)


def _start(tracer: trace.Tracer, name: str, **options: Any) -> Span | None:
    """A new span, or None when the SDK failed to start one (a model or tool call never fails
    because of its span)."""
    try:
        return tracer.start_span(name, **options)
    except Exception as exc:
        log.warning("tracing: starting span %r failed (%s: %s); the call goes on without it.",
                    name, type(exc).__name__, exc)
        return None


def _end(span: Span) -> None:
    try:
        span.end()
    except Exception as exc:  # e.g. a span processor that raises: the result is what matters
        log.warning("tracing: ending a span failed (%s: %s); the run goes on.",
                    type(exc).__name__, exc)


class Tracing:
    """Where spans go and what they hold. ``tracer_provider``: the SDK's provider (default:
    the global one, set by ``opentelemetry.trace.set_tracer_provider`` or the OTel
    environment); ``record_content``: record tool arguments and results."""

    def __init__(self, tracer_provider: TracerProvider | None = None, *,
                 record_content: bool = False, content_limit: int = 4096) -> None:
        self.tracer = trace.get_tracer("interlock", tracer_provider=tracer_provider)
        self.record_content = record_content
        self.content_limit = content_limit

    def content(self, value: Any) -> str:
        # as a reader sees it in the inbox: hidden characters as visible escapes, ⟨U+202E⟩
        text = visible(value if isinstance(value, str)
                       else json.dumps(value, ensure_ascii=False, default=str))
        return text if len(text) <= self.content_limit else text[:self.content_limit] + "…"

    def run(self, thread_id: str, agent: str) -> RunTrace:
        return RunTrace(self, thread_id, agent)

    def model(self, model: Model) -> Model:
        return TracedModel(model, self)

    def tool_handler(self, handler: ToolCallHandler) -> ToolCallHandler:
        tracer = self.tracer

        async def traced(request: ToolCallRequest) -> ToolMessage:
            call = request.call
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id, "gen_ai.tool.type": "function",
                "interlock.thread.id": request.thread_id,
                "interlock.tool.attempt": request.context.attempt}
            if self.record_content:
                attrs["gen_ai.tool.call.arguments"] = self.content(call.args)
            span = _start(tracer, f"execute_tool {call.name}", attributes=attrs)
            if span is None:
                return await handler(request)
            # current while the tool runs: a sub-agent's run nests under it
            token = otel_context.attach(trace.set_span_in_context(span))
            try:
                msg = await handler(request)
            except Exception as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
                raise
            except BaseException as exc:  # a question (interrupt()), a waiting sub-agent
                span.set_attribute("interlock.tool.paused", type(exc).__name__)
                raise
            else:
                if msg.status == "error":
                    span.set_status(Status(StatusCode.ERROR, "the tool returned an error"))
                if self.record_content:
                    span.set_attribute("gen_ai.tool.call.result", self.content(msg.content))
                return msg
            finally:
                otel_context.detach(token)
                _end(span)

        return traced


class RunTrace:
    """The spans of one engine operation on one thread."""

    def __init__(self, tracing: Tracing, thread_id: str, agent: str) -> None:
        self.tracing = tracing
        self.thread_id = thread_id
        self.agent = agent
        self.span: Span | None = None
        self.token: object | None = None
        self.root: otel_context.Context | None = None
        """The context of the run's first span (parent of the waits)."""

    @property
    def trace_id(self) -> str | None:
        if self.span is None:
            return None
        return format(self.span.get_span_context().trace_id, "032x")

    def loaded(self, thread: ThreadRecord, new_run: bool) -> str | None:
        if self.span is not None:
            return None
        stored = None if new_run else thread.trace
        parent = _PROPAGATOR.extract({"traceparent": stored}) if stored else None
        # continuing the run's trace: what caused this operation (e.g. the HTTP request of a
        # decision, when the server is instrumented) is linked, not the parent
        caller = trace.get_current_span().get_span_context() if stored else None
        self.span = self.tracing.tracer.start_span(
            f"invoke_agent {self.agent}", context=parent, attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": self.agent,
                "gen_ai.conversation.id": self.thread_id,
                "interlock.run.continued": stored is not None},
            links=[Link(caller)] if caller is not None and caller.is_valid else None)
        ctx = trace.set_span_in_context(self.span, parent)
        self.token = otel_context.attach(ctx)
        if stored:
            self.root = parent
            return None
        self.root = ctx
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=ctx)
        return carrier.get("traceparent")

    def committed(self, before: ThreadRecord | None, records: Sequence[AuditRecord]) -> None:
        pending = {i.id: i for i in before.pending} if before is not None else {}
        for r in records:
            if r.kind not in _WAIT_ENDS:
                continue
            intr = pending.get(str(r.data.get("interrupt_id")))
            if intr is None:
                continue
            name = str(r.data.get("name", "")) or None
            decision = _WAIT_ENDS[r.kind] or str(r.data.get("type", ""))
            attrs: dict[str, Any] = {
                "interlock.interrupt.id": intr.id, "interlock.interrupt.kind": intr.kind,
                "interlock.reviewer": r.actor, "interlock.decision.type": decision,
                "interlock.thread.id": r.thread_id}
            if r.tool_call_id is not None:
                attrs["gen_ai.tool.call.id"] = r.tool_call_id
            if name is not None:
                attrs["gen_ai.tool.name"] = name
            revision = r.data.get("revision")
            if isinstance(revision, int):
                attrs["interlock.request.revision"] = revision
            span = self.tracing.tracer.start_span(
                f"await_review {name}" if intr.kind == "review" else "await_input",
                context=self.root, start_time=_ns(intr.created_at), attributes=attrs)
            span.end(end_time=max(_ns(r.ts), _ns(intr.created_at)))

    def ended(self, exc: BaseException | None) -> None:
        span, self.span = self.span, None
        if span is None:
            return
        if exc is not None:
            span.set_attribute("interlock.outcome", type(exc).__name__)
            if isinstance(exc, Exception):
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        if self.token is not None:
            try:
                otel_context.detach(self.token)  # type: ignore[arg-type]
            finally:
                self.token = None
        span.end()


class TracedModel:
    """A model whose calls are ``chat`` spans."""

    def __init__(self, inner: Model, tracing: Tracing) -> None:
        self.inner = inner
        self.tracing = tracing
        self.name = str(getattr(inner, "model", None) or type(inner).__name__)

    def _span(self) -> Span | None:
        return _start(self.tracing.tracer, f"chat {self.name}", kind=SpanKind.CLIENT,
                      attributes={"gen_ai.operation.name": "chat",
                                  "gen_ai.request.model": self.name})

    def _done(self, span: Span, message: AssistantMessage) -> None:
        if message.usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", message.usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", message.usage.output_tokens)
        span.set_attribute("gen_ai.response.finish_reasons",
                           ["tool_calls" if message.tool_calls else "stop"])
        if self.tracing.record_content and message.content:
            span.set_attribute("gen_ai.output.text", self.tracing.content(message.content))

    @staticmethod
    def _failed(span: Span, exc: BaseException) -> None:
        if isinstance(exc, Exception):
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))

    async def generate(self, messages: Sequence[Message],
                       tools: Sequence[Tool]) -> AssistantMessage:
        span = self._span()
        if span is None:
            return await self.inner.generate(messages, tools)
        try:
            message = await self.inner.generate(messages, tools)
        except BaseException as exc:
            self._failed(span, exc)
            raise
        else:
            self._done(span, message)
            return message
        finally:
            _end(span)

    async def stream(self, messages: Sequence[Message],
                     tools: Sequence[Tool]) -> AsyncIterator[str | AssistantMessage]:
        span = self._span()
        try:
            async for piece in self.inner.stream(messages, tools):
                if span is not None and isinstance(piece, AssistantMessage):
                    self._done(span, piece)
                yield piece
        except BaseException as exc:
            if span is not None:
                self._failed(span, exc)
            raise
        finally:
            if span is not None:
                _end(span)

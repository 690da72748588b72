"""The LangGraph server API routes (the subset ``langgraph-sdk`` and Agent Inbox use)."""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ... import __version__
from ...agent import ThreadState
from ...authz import same_reviewer
from ...errors import (
    InterlockError,
    ModelError,
    NoPendingInterrupt,
    NotAuthorized,
    RunLimitExceeded,
    ThreadNotFound,
)
from ...result import RunResult
from ...storage.base import ThreadRecord
from ...text import check_thread_id
from ..api import caller_for, cancel_thread
from ..auth import Identity
from ..errors import ApiError
from ..hub import Subscription
from ..state import ServerState, get_state
from .responses import Plan, plan_resume
from .runs import (
    STOPPED,
    STREAM_MODES,
    LoadState,
    RunRecord,
    RunRegistry,
    StreamContext,
    stream_run,
    subscribe,
)
from .select import (
    ASSISTANT_FIELDS,
    RUN_FIELDS,
    STATE_FIELDS,
    THREAD_FIELDS,
    check_extract,
    check_select,
    extracted,
    selected,
)
from .shapes import (
    STATUSES_FOR,
    AssistantInfo,
    Format,
    checkpoint_json,
    empty_state_json,
    metadata_matches,
    new_thread_json,
    state_json,
    thread_json,
    values_json,
)

END = "__end__"
KEEP_NEW_THREADS = 10_000
IGNORE_REASON = "The reviewer ignored this request (LangGraph client)."
RESOLVE_REASON = "The reviewer marked this request as resolved (LangGraph client)."


@dataclass(frozen=True)
class NewThread:
    """A thread created through the API that has had no run yet: its metadata is stored with
    it by its first run."""

    created_at: datetime
    metadata: dict[str, Any]
    owner: str | None
    """Who created it (``None``: local mode); it belongs to them as a stored thread does."""


class LangGraphAPI:
    """What the LangGraph routes share: the review server's state, the one assistant, the runs
    started here and the threads created here that have had no run yet (those exist only in
    this process until their first run stores them)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.assistant = AssistantInfo.of(state.agent, datetime.now(UTC))
        self.runs = RunRegistry()
        self.new_threads: OrderedDict[str, NewThread] = OrderedDict()

    def remember_new(self, thread_id: str, metadata: dict[str, Any] | None,
                     caller: Identity) -> NewThread:
        new = self.new_threads.setdefault(thread_id, NewThread(
            datetime.now(UTC), dict(metadata or {}),
            caller.id if caller.authenticated else None))
        while len(self.new_threads) > KEEP_NEW_THREADS:
            self.new_threads.popitem(last=False)
        return new

    def new_json(self, thread_id: str) -> dict[str, Any]:
        new = self.new_threads[thread_id]
        return new_thread_json(thread_id, new.created_at, self.assistant, new.metadata)

    def new_thread(self, thread_id: str, caller: Identity) -> NewThread | None:
        """``caller``'s thread ``thread_id`` created here, if it has had no run yet.
        Such a thread belongs to its creator as a stored thread does (admins see it too);
        for another token it does not exist, and :class:`NotAuthorized` is raised."""
        entry = self.new_threads.get(thread_id)
        if entry is None:
            return None
        reviewer = caller.reviewer()
        if reviewer is None or entry.owner is None or reviewer.is_admin or \
                same_reviewer(entry.owner, reviewer.id):
            return entry
        raise NotAuthorized(
            f"Reviewer {caller.id!r} may not use thread {thread_id!r}: another reviewer "
            f"created it. Create a thread of your own (POST /threads without a thread_id).")

    def new_threads_of(self, caller: Identity) -> list[tuple[str, NewThread]]:
        """The threads created here without a run yet that ``caller`` may see."""
        out = []
        for tid in self.new_threads:
            try:
                created = self.new_thread(tid, caller)
            except NotAuthorized:
                continue
            if created is not None:
                out.append((tid, created))
        return out

    async def load(self, thread_id: str, caller: Identity) -> ThreadState | None:
        """The thread as ``caller`` may read it (``NotAuthorized`` otherwise: the same rule as
        ``/api``), or None when it is not stored."""
        try:
            return await self.state.agent.aget_thread(thread_id, reviewer=caller.reviewer())
        except ThreadNotFound:
            return None

    async def check_readable(self, thread_id: str, caller: Identity) -> None:
        """That ``caller`` may read thread ``thread_id``, stored or created here without a run
        yet: ``NotAuthorized`` when another's, ``ThreadNotFound`` when there is none (its
        runs are shown to its readers only)."""
        if await self.load(thread_id, caller) is None and \
                self.new_thread(thread_id, caller) is None:
            raise ThreadNotFound(thread_id)

    def note(self, caller: Identity, state: ThreadState) -> ThreadState:
        """A response to ``caller`` shows ``state``'s pending requests (returned as is)."""
        self.state.shown.note(caller.id, state.thread_id, state.interrupts)
        return state

    def loader(self, thread_id: str, caller: Identity) -> LoadState:
        async def load() -> ThreadState:
            return await self.state.agent.aget_thread(thread_id, reviewer=caller.reviewer())

        return load

    def check_assistant(self, ref: str) -> None:
        if not self.assistant.matches(ref):
            raise ApiError(404, "NotFound",
                           f"Assistant {ref!r} not found. This server has one assistant: "
                           f"assistant_id {self.assistant.assistant_id!r}, graph_id "
                           f"{self.assistant.graph_id!r} (either may be used).")


def get_api(request: Request) -> LangGraphAPI:
    api = request.app.state.langgraph
    assert isinstance(api, LangGraphAPI)
    return api


State = Annotated[ServerState, Depends(get_state)]
API = Annotated[LangGraphAPI, Depends(get_api)]


async def lg_caller(request: Request, state: State) -> Identity:
    """The caller from ``x-api-key`` (what the LangGraph clients send) or a bearer token."""
    token = request.headers.get("x-api-key")
    if not token:
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        token = credentials if scheme.lower() == "bearer" else None
    return caller_for(request, state, token,
                      how="'x-api-key: <token>' or 'Authorization: Bearer <token>'")


Caller = Annotated[Identity, Depends(lg_caller)]
Select = Annotated[list[str] | None, Query()]
"""``?select=a&select=b``: only these fields of what is returned (``select.py``)."""
RunFilter = Literal["pending", "running", "error", "success", "timeout", "interrupted"]


# -- bodies ----------------------------------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ThreadCreate(_Body):
    thread_id: str | None = Field(default=None, min_length=1, max_length=200)
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] | None = None
    supersteps: Any = None
    """Refused when given (a thread's state comes from its runs here)."""


class ThreadSearch(_Body):
    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    ids: list[str] | None = Field(default=None, max_length=1000)
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=10_000)
    sort_by: str | None = None
    sort_order: str | None = None
    select: list[str] | None = None
    """Only these fields of each thread (``select.THREAD_FIELDS``)."""
    extract: dict[str, Any] | None = None
    """Values read from each thread by path, returned as its ``extracted`` object."""


class AssistantSearch(_Body):
    metadata: dict[str, Any] | None = None
    graph_id: str | None = None
    name: str | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    select: list[str] | None = None


class RunCreate(_Body):
    assistant_id: str
    input: Any = None
    command: dict[str, Any] | None = None
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    stream_mode: str | list[str] = "values"
    metadata: dict[str, Any] | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    interrupt_before: Any = None
    interrupt_after: Any = None
    after_seconds: float | None = None
    """Refused when positive (a run here starts when it is asked for)."""
    webhook: str | None = None
    """Refused when given (nothing here would call it when the run ends)."""
    on_completion: str | None = None
    """``delete`` is refused (a thread is kept with its audit log)."""


class StateUpdate(_Body):
    values: Any = None
    as_node: str | None = None


class StateAt(_Body):
    checkpoint: dict[str, Any]
    select: list[str] | None = None


class History(_Body):
    limit: int = Field(default=10, ge=1)
    select: list[str] | None = None
    """Only these fields of each state (``values.<key>`` for one key of its values)."""
    before: Any = None
    """States before this checkpoint: interlock keeps a thread's current state only, so none
    (a client paging back through the history stops after the first page)."""
    metadata: dict[str, Any] | None = None
    """Only states whose metadata contains this."""
    checkpoint: dict[str, Any] | None = None
    """Only states at or before this checkpoint (of the root graph: interlock has no
    subgraph namespaces)."""


# -- helpers -----------------------------------------------------------------------------------


def _unsupported(error: str, message: str) -> ApiError:
    return ApiError(422, error, message)


def _input_text(thread_id: str, value: Any) -> str:
    """The user's message from LangGraph-style input: ``{"messages": [{"role": "user",
    "content": "..."}]}`` (one human message; ``type: human`` and content blocks also work)."""
    messages = value.get("messages") if isinstance(value, dict) else None
    if isinstance(messages, str):
        return messages
    if isinstance(messages, dict):
        messages = [messages]
    if isinstance(messages, list) and len(messages) == 1 and isinstance(messages[0], dict):
        m = messages[0]
        if m.get("role", m.get("type")) in ("user", "human"):
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(b.get("text", "") for b in content
                                  if isinstance(b, dict) and b.get("type") == "text")
            if isinstance(content, str) and content.strip():
                return content
    raise _unsupported(
        "UnsupportedInput",
        f"Cannot start a run on thread {thread_id!r} with input {str(value)[:200]!r}: send "
        f"input = {{'messages': [{{'role': 'user', 'content': 'TEXT'}}]}} with exactly one "
        f"user message (the agent keeps the rest of the conversation).")


def _modes(value: str | list[str]) -> tuple[str, ...]:
    modes = (value,) if isinstance(value, str) else tuple(value)
    bad = [m for m in modes if m not in STREAM_MODES]
    if bad or not modes:
        raise _unsupported(
            "UnsupportedStreamMode",
            f"stream_mode {bad or modes!r} is not supported here; use any of "
            f"{', '.join(STREAM_MODES)}.")
    return modes


def _run_location(request: Request, rec: RunRecord) -> dict[str, str]:
    root = request.scope.get("root_path", "")
    return {"Content-Location": f"{root}/threads/{rec.thread_id}/runs/{rec.run_id}"}


async def _plan(api: LangGraphAPI, caller: Identity, thread_id: str, body: RunCreate,
                explicit: bool) -> tuple[Plan | None, str | None]:
    """What the run does: resume (a plan) or start with a message (its text)."""
    api.check_assistant(body.assistant_id)
    api.state.limits.metadata("metadata", body.metadata)  # kept with the run's record
    if body.after_seconds:  # never run at another time than the client asked for
        raise _unsupported(
            "UnsupportedOption",
            "after_seconds is not supported: a run starts when it is created. Nothing was "
            "run; send the run without after_seconds when it should start.")
    if body.webhook:
        raise _unsupported(
            "UnsupportedOption",
            "webhook is not supported: nothing would call it when the run ends. Nothing was "
            "run; follow the run with runs.join or runs.stream, or configure interlock's "
            "notifications (docs/notifications.md).")
    if body.on_completion is not None and body.on_completion != "keep":
        raise _unsupported(
            "UnsupportedOption",
            f"on_completion={body.on_completion!r} is not supported: interlock keeps every "
            f"thread, a stateless run's too, with its audit log (see docs/durability.md for "
            f"retention). Nothing was run; send the run without on_completion, or with "
            f"on_completion='keep'.")
    for name in ("interrupt_before", "interrupt_after"):
        if getattr(body, name):  # a client that asks to pause is never run without the pause
            raise _unsupported(
                "UnsupportedInterrupt",
                f"{name} is not supported: interlock pauses a run for review by the agent's "
                f"own policy (HumanInTheLoop's InterruptOn per tool), not at graph nodes a "
                f"client names. Nothing was run; send the run without {name}.")
    current = await api.load(thread_id, caller)
    created = api.new_thread(thread_id, caller) if current is None else None
    if current is None and explicit and created is None \
            and body.if_not_exists != "create":
        raise ThreadNotFound(thread_id)
    _check_checkpoint(thread_id, current, body)
    if body.command is not None:
        command = {k: v for k, v in body.command.items() if v is not None}
        ends = command.get("goto") in (END, [END])
        extra = sorted(set(command) - {"resume", "goto"})
        if extra or ("goto" in command and not ends) or not ({"resume", "goto"} & set(command)) \
                or ("resume" in command and ends):
            raise _unsupported(
                "UnsupportedCommand",
                f"command {list(body.command)} is not supported: interlock resumes paused "
                f"calls with command = {{'resume': ...}}, and ends a paused thread (every "
                f"pending call cancelled) with command = {{'goto': '__end__'}}.")
        if current is None:
            # a thread created here that has had no run: it exists, with nothing to resume
            raise NoPendingInterrupt(thread_id) if created is not None \
                else ThreadNotFound(thread_id)
        if ends:
            if not current.interrupts:
                raise NoPendingInterrupt(thread_id)
            return Plan("cancel", reason=RESOLVE_REASON), None
        # sent with the checkpoint its client read (checked above: the latest), a command is
        # bound to what that read showed; else to what the caller was last shown here
        bound = bool(body.checkpoint_id or (body.checkpoint or {}).get("checkpoint_id"))
        shown = None if bound else api.state.shown.get(caller.id, thread_id)
        return plan_resume(api.state.agent, current, command["resume"], caller.id,
                           shown), None
    if body.input is None:
        raise _unsupported(
            "UnsupportedInput",
            f"A run on thread {thread_id!r} needs input (a user message) or "
            f"command.resume (answers to its pending interrupts).")
    return None, _input_text(thread_id, body.input)


def _check_checkpoint(thread_id: str, current: ThreadState | None, body: RunCreate) -> None:
    """A run from the thread's latest checkpoint is an ordinary run; from an earlier one
    (editing an earlier message, regenerating an answer) it would branch the thread, which
    interlock does not do: refused, never silently appended. A resume (``command``) from a
    checkpoint that is no longer the latest was read before the thread moved on: the
    interrupts it answers may not be the ones pending now, so it is a conflict, refused
    whatever it says (a client binds an answer to the state it was shown this way)."""
    given = body.checkpoint_id or (body.checkpoint or {}).get("checkpoint_id")
    if not given:
        return
    head = checkpoint_json(thread_id, current.version if current is not None else 0)[
        "checkpoint_id"]
    if given != head and body.command is not None:
        raise ApiError(
            409, "StaleCheckpoint",
            f"This command was sent for checkpoint {given!r} of thread {thread_id!r}, but the "
            f"thread has changed since (latest checkpoint: {head!r}): what it answers may not "
            f"be what is pending now. Nothing was stored or run. Read the thread's state "
            f"again and answer the interrupts it shows, keyed by their interrupt ids, with "
            f"its new checkpoint.")
    if given != head:
        raise _unsupported(
            "UnsupportedCheckpoint",
            f"A run from checkpoint {given!r} of thread {thread_id!r} would branch the thread "
            f"from an earlier state (editing an earlier message, regenerating an answer); "
            f"interlock keeps each thread as one append-only history for its audit log and "
            f"does not branch. Send the message without a checkpoint to add it at the end "
            f"(latest checkpoint: {head!r}), or start a new thread.")


def _in_history(state: dict[str, Any], body: History) -> bool:
    """Whether the thread's one state passes a history request's filters, as LangGraph
    applies them: its metadata contains ``metadata``, and ``checkpoint`` names it (or no
    checkpoint id, in the root namespace)."""
    if body.metadata and not metadata_matches(state["metadata"], body.metadata):
        return False
    wanted = body.checkpoint or {}
    if wanted.get("checkpoint_ns"):
        return False
    given = wanted.get("checkpoint_id")
    return not given or given == state["checkpoint"]["checkpoint_id"]


def _check_sizes(state: ServerState, plan: Plan | None, text: str | None) -> None:
    """The server's size limits, as on ``/api`` (422 naming the limit; nothing stored)."""
    limits = state.limits
    if plan is None:
        limits.text("input.messages.0.content", text)
    elif plan.kind == "answer":
        limits.json_value("command.resume", plan.value, "max_answer_bytes",
                          limits.max_answer_bytes)
    elif plan.kind == "decide":
        limits.decisions(plan.decisions)


def _run_failed(exc: Exception) -> bool:
    """Whether ``exc`` ended a run after its input was stored (the model failed, the run
    went past its turns, a tool's own error escaped), not a refusal of the request (a
    conflict, a wrong decision, a role, the store), which keeps its HTTP status."""
    if isinstance(exc, ModelError | RunLimitExceeded):
        return True
    return not isinstance(exc, InterlockError | ApiError | HTTPException)


async def _launch(api: LangGraphAPI, caller: Identity, thread_id: str, plan: Plan | None,
                  text: str | None, *, wait: bool) -> RunResult | None:
    state = api.state
    _check_sizes(state, plan, text)
    if plan is None:
        assert text is not None
        new = api.new_threads.get(thread_id)
        result = await state.runner.start(thread_id, text, reviewer=caller.reviewer(),
                                          wait=wait,
                                          metadata=new.metadata if new is not None else None)
    elif plan.kind == "cancel":
        return await cancel_thread(state, caller, thread_id, plan.reason or IGNORE_REASON)
    elif plan.kind == "answer":
        result = await state.runner.answer(thread_id, plan.value, interrupt_id=plan.interrupt_id,
                                           reviewer=caller.reviewer(), actor=caller.id,
                                           wait=wait)
    else:
        result = await state.runner.resume(thread_id, plan.decisions,
                                           interrupt_id=plan.interrupt_id,
                                           reviewer=caller.reviewer(), actor=caller.id,
                                           wait=wait)
    api.new_threads.pop(thread_id, None)
    return result


async def _start(api: LangGraphAPI, caller: Identity, thread_id: str, body: RunCreate,
                 explicit: bool) -> tuple[RunRecord, Subscription | None]:
    """Launch a background run; its input is stored (or refused) before this returns. The
    subscription (None when the run already ended, e.g. ``ignore``) carries its events."""
    plan, text = await _plan(api, caller, thread_id, body, explicit)
    rec = api.runs.new(thread_id, api.assistant, body.metadata)
    sub = subscribe(api.state, thread_id)
    try:
        result = await _launch(api, caller, thread_id, plan, text, wait=False)
    except BaseException as exc:
        api.state.hub.unsubscribe(sub)
        api.runs.refused(rec, exc)
        raise
    rec.status = "running"
    if result is not None:  # finished at once (a cancel)
        api.state.hub.unsubscribe(sub)
        rec.finish("interrupted" if result.interrupted else "success")
        return rec, None
    return rec, sub


async def _values(api: LangGraphAPI, caller: Identity, thread_id: str,
                  fmt: Format) -> dict[str, Any]:
    current = await api.load(thread_id, caller)
    return values_json(api.note(caller, current), fmt) if current is not None else {}


# -- routes ------------------------------------------------------------------------------------


def build_router(fmt: Format) -> APIRouter:
    """The routes, with interrupts in ``fmt`` (``hitl`` or ``inbox``)."""
    router = APIRouter()

    @router.get("/ok", tags=["server"])
    async def ok() -> dict[str, bool]:
        return {"ok": True}

    @router.get("/info", tags=["server"])
    async def info(_: Caller) -> dict[str, Any]:
        return {"version": f"interlock-{__version__}", "interrupt_format": fmt,
                "flags": {"assistants": True, "crons": False, "langsmith": False}}

    # assistants

    @router.post("/assistants/search", tags=["assistants"])
    async def search_assistants(api: API, _: Caller, body: AssistantSearch) -> JSONResponse:
        fields = check_select(body.select, ASSISTANT_FIELDS, "assistant")
        a = api.assistant
        found = a.to_json(api.state.agent)
        keep = (body.graph_id in (None, a.graph_id)
                and (body.name is None or body.name.lower() in a.graph_id.lower())
                and all(found["metadata"].get(k) == v for k, v in (body.metadata or {}).items()))
        items = [selected(found, fields)] if keep else []
        return JSONResponse(items[body.offset: body.offset + body.limit])

    @router.get("/assistants/{assistant_id}", tags=["assistants"])
    async def get_assistant(api: API, _: Caller, assistant_id: str) -> dict[str, Any]:
        api.check_assistant(assistant_id)
        return api.assistant.to_json(api.state.agent)

    # threads

    @router.post("/threads", tags=["threads"])
    async def create_thread(api: API, caller: Caller, body: ThreadCreate) -> dict[str, Any]:
        if body.supersteps:  # never a thread without the state its client asked for
            raise _unsupported(
                "UnsupportedOption",
                "supersteps is not supported: a thread's state comes from its runs here. "
                "Nothing was created; create the thread without supersteps and send its "
                "first message as a run's input.")
        thread_id = body.thread_id or str(uuid.uuid4())
        check_thread_id(thread_id)  # as the core checks it when the first run stores it
        current = await api.load(thread_id, caller)
        if current is not None:
            if body.if_exists == "do_nothing":
                return thread_json(api.note(caller, current), fmt, api.assistant)
            raise ApiError(409, "ThreadExists",
                           f"Thread {thread_id!r} already exists; pass if_exists='do_nothing' "
                           f"to get it, or use another thread_id.")
        if api.new_thread(thread_id, caller) is not None:  # another reviewer's: NotAuthorized
            if body.if_exists == "do_nothing":  # created here, no run yet: it exists too
                return api.new_json(thread_id)
            raise ApiError(409, "ThreadExists",
                           f"Thread {thread_id!r} already exists (created, no run yet); pass "
                           f"if_exists='do_nothing' to get it, or use another thread_id.")
        api.state.limits.metadata("metadata", body.metadata)
        api.remember_new(thread_id, body.metadata, caller)
        return api.new_json(thread_id)

    @router.post("/threads/search", tags=["threads"])
    async def search_threads(api: API, caller: Caller, body: ThreadSearch) -> JSONResponse:
        return JSONResponse(await _search(api, caller, body, fmt))

    @router.get("/threads/{thread_id}", tags=["threads"])
    async def get_thread(api: API, caller: Caller, thread_id: str) -> dict[str, Any]:
        current = await api.load(thread_id, caller)
        if current is not None:
            return thread_json(api.note(caller, current), fmt, api.assistant)
        if api.new_thread(thread_id, caller) is not None:
            return api.new_json(thread_id)
        raise ThreadNotFound(thread_id)

    async def _state(api: LangGraphAPI, caller: Identity, thread_id: str,
                     checkpoint_id: str | None = None,
                     select: list[str] | None = None) -> dict[str, Any]:
        """The thread's state; with ``checkpoint_id``, only if that is its latest checkpoint
        (interlock keeps a thread's current state only); with ``select``, only those fields."""
        fields = check_select(select, STATE_FIELDS, "thread state", values_keys=True)
        current = await api.load(thread_id, caller)
        if current is not None:
            out = state_json(current, fmt)
            if checkpoint_id is None or checkpoint_id == out["checkpoint"]["checkpoint_id"]:
                api.note(caller, current)
        else:
            new = api.new_thread(thread_id, caller)
            if new is None:
                raise ThreadNotFound(thread_id)
            out = empty_state_json(thread_id, new.created_at)
        head = out["checkpoint"]["checkpoint_id"]
        if checkpoint_id is not None and checkpoint_id != head:
            raise ApiError(404, "CheckpointNotFound",
                           f"Thread {thread_id!r} has no state at checkpoint {checkpoint_id!r}: "
                           f"interlock keeps each thread's current state only (its latest "
                           f"checkpoint is {head!r}); read the state without a checkpoint.")
        return selected(out, fields)

    @router.get("/threads/{thread_id}/state", tags=["threads"])
    async def get_thread_state(api: API, caller: Caller, thread_id: str,
                               select: Select = None) -> dict[str, Any]:
        return await _state(api, caller, thread_id, select=select)

    @router.get("/threads/{thread_id}/state/{checkpoint_id}", tags=["threads"])
    async def get_thread_state_at(api: API, caller: Caller, thread_id: str,
                                  checkpoint_id: str, select: Select = None) -> dict[str, Any]:
        return await _state(api, caller, thread_id, checkpoint_id, select)

    @router.post("/threads/{thread_id}/state/checkpoint", tags=["threads"])
    async def get_thread_state_at_checkpoint(api: API, caller: Caller, thread_id: str,
                                             body: StateAt) -> dict[str, Any]:
        given = body.checkpoint.get("checkpoint_id")
        if not isinstance(given, str) or not given:
            raise _unsupported("InvalidCheckpoint", "checkpoint must carry a checkpoint_id.")
        return await _state(api, caller, thread_id, given, body.select)

    @router.post("/threads/{thread_id}/history", tags=["threads"])
    async def thread_history(api: API, caller: Caller, thread_id: str,
                             body: History | None = None) -> JSONResponse:
        fields = check_select(body.select if body is not None else None, STATE_FIELDS,
                              "thread state", values_keys=True)
        current = await api.load(thread_id, caller)
        if current is None and api.new_thread(thread_id, caller) is None:
            raise ThreadNotFound(thread_id)
        if current is None or (body is not None and body.before):
            return JSONResponse([])
        out = state_json(current, fmt)
        if body is not None and not _in_history(out, body):
            return JSONResponse([])
        api.note(caller, current)
        return JSONResponse([selected(out, fields)])

    @router.post("/threads/{thread_id}/state", tags=["threads"])
    async def update_thread_state(api: API, caller: Caller, thread_id: str,
                                  body: StateUpdate) -> dict[str, Any]:
        if body.as_node != "__end__" or body.values is not None:
            raise _unsupported(
                "UnsupportedStateUpdate",
                "interlock's thread state changes only through runs and decisions; the one "
                "supported update is values=None with as_node='__end__' (Agent Inbox's "
                "'mark as resolved'), which cancels every pending call of the thread.")
        result = await cancel_thread(api.state, caller, thread_id, RESOLVE_REASON)
        current = await api.state.agent.aget_thread(result.thread_id,
                                                    reviewer=caller.reviewer())
        return {"checkpoint": state_json(current, fmt)["checkpoint"]}

    # runs

    async def _create(request: Request, api: LangGraphAPI, caller: Identity,
                      thread_id: str, body: RunCreate, explicit: bool) -> JSONResponse:
        rec, sub = await _start(api, caller, thread_id, body, explicit)
        if sub is not None:
            api.runs.follow(rec, sub, api.state, api.loader(thread_id, caller))
        return JSONResponse(rec.to_json(), headers=_run_location(request, rec))

    async def _wait(request: Request, api: LangGraphAPI, caller: Identity, thread_id: str,
                    body: RunCreate, explicit: bool) -> JSONResponse:
        plan, text = await _plan(api, caller, thread_id, body, explicit)
        rec = api.runs.new(thread_id, api.assistant, body.metadata)
        try:
            result = await _launch(api, caller, thread_id, plan, text, wait=True)
        except Exception as exc:
            api.runs.refused(rec, exc)
            if not _run_failed(exc):
                raise
            # the run was accepted and failed (the model raised, too many turns): as
            # LangGraph answers it, the thread's values with "__error__" (the SDK's
            # runs.wait raises it, or returns it with raise_error=False)
            values = await _values(api, caller, thread_id, fmt)
            return JSONResponse({**values, "__error__": {"error": type(exc).__name__,
                                                         "message": str(exc)}},
                                headers=_run_location(request, rec))
        except BaseException as exc:
            api.runs.refused(rec, exc)
            raise
        rec.finish("interrupted" if result is not None and result.interrupted else "success")
        return JSONResponse(await _values(api, caller, thread_id, fmt),
                            headers=_run_location(request, rec))

    async def _stream(request: Request, api: LangGraphAPI, caller: Identity, thread_id: str,
                      body: RunCreate, explicit: bool) -> StreamingResponse:
        modes = _modes(body.stream_mode)
        # what is stored when the run is accepted: every message after it is streamed, even
        # those of a run that gets ahead of this stream
        before = await api.load(thread_id, caller)
        rec, sub = await _start(api, caller, thread_id, body, explicit)
        state = api.state
        accepted = len(before.messages) if before is not None else 0
        ctx = StreamContext(rec, api.assistant, fmt, modes, api.loader(thread_id, caller),
                            seen_messages=accepted, accepted=accepted,
                            note=lambda shown: api.note(caller, shown))
        return StreamingResponse(
            stream_run(ctx, sub, state, state.sse_keepalive, api.runs),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no",
                     **_run_location(request, rec)})

    @router.post("/threads/{thread_id}/runs", tags=["runs"])
    async def create_run(request: Request, api: API, caller: Caller, thread_id: str,
                         body: RunCreate) -> JSONResponse:
        return await _create(request, api, caller, thread_id, body, True)

    @router.post("/threads/{thread_id}/runs/wait", tags=["runs"])
    async def wait_run(request: Request, api: API, caller: Caller, thread_id: str,
                       body: RunCreate) -> JSONResponse:
        return await _wait(request, api, caller, thread_id, body, True)

    @router.post("/threads/{thread_id}/runs/stream", tags=["runs"],
                 response_class=StreamingResponse)
    async def stream_thread_run(request: Request, api: API, caller: Caller, thread_id: str,
                                body: RunCreate) -> StreamingResponse:
        return await _stream(request, api, caller, thread_id, body, True)

    @router.post("/runs", tags=["runs"])
    async def create_stateless_run(request: Request, api: API, caller: Caller,
                                   body: RunCreate) -> JSONResponse:
        return await _create(request, api, caller, str(uuid.uuid4()), body, False)

    @router.post("/runs/wait", tags=["runs"])
    async def wait_stateless_run(request: Request, api: API, caller: Caller,
                                 body: RunCreate) -> JSONResponse:
        return await _wait(request, api, caller, str(uuid.uuid4()), body, False)

    @router.post("/runs/stream", tags=["runs"], response_class=StreamingResponse)
    async def stream_stateless_run(request: Request, api: API, caller: Caller,
                                   body: RunCreate) -> StreamingResponse:
        return await _stream(request, api, caller, str(uuid.uuid4()), body, False)

    @router.get("/threads/{thread_id}/runs", tags=["runs"])
    async def list_runs(api: API, caller: Caller, thread_id: str,
                        limit: Annotated[int, Query(ge=1, le=1000)] = 10,
                        offset: Annotated[int, Query(ge=0)] = 0,
                        status: RunFilter | None = None,
                        select: Select = None) -> JSONResponse:
        """The runs this process started on the thread, newest first."""
        fields = check_select(select, RUN_FIELDS, "run")
        await api.check_readable(thread_id, caller)
        runs = [r for r in api.runs.of_thread(thread_id) if status in (None, r.status)]
        return JSONResponse([selected(r.to_json(), fields)
                             for r in runs[offset:offset + limit]])

    def _run(api: LangGraphAPI, thread_id: str, run_id: str) -> RunRecord:
        rec = api.runs.get(thread_id, run_id)
        if rec is None:
            raise ApiError(404, "NotFound",
                           f"Run {run_id!r} of thread {thread_id!r} is not known to this "
                           f"server process (runs are kept in memory; read the thread instead).")
        return rec

    @router.get("/threads/{thread_id}/runs/{run_id}", tags=["runs"])
    async def get_run(api: API, caller: Caller, thread_id: str,
                      run_id: str) -> dict[str, Any]:
        await api.check_readable(thread_id, caller)
        return _run(api, thread_id, run_id).to_json()

    @router.get("/threads/{thread_id}/runs/{run_id}/join", tags=["runs"])
    async def join_run(api: API, caller: Caller, thread_id: str, run_id: str) -> JSONResponse:
        await api.check_readable(thread_id, caller)
        rec = _run(api, thread_id, run_id)
        await rec.done.wait()
        values = await _values(api, caller, thread_id, fmt)
        if rec.status == "error" and rec.error is not None and rec.error is not STOPPED:
            values["__error__"] = dict(rec.error)  # as runs.wait answers a failed run
        return JSONResponse(values)

    # what interlock does not do, said as such (not a bare 404 or 405 that reads as a typo)
    for method, path, what, instead in UNSUPPORTED:
        router.add_api_route(path, _refusal(what, instead), methods=[method],
                             tags=["unsupported"], include_in_schema=False)
    return router


_FOLLOW = ("A run's events are streamed only to the runs.stream request that starts it; wait "
           "for a run's end with runs.join, or read the thread (threads.get_state).")
_ONE_ASSISTANT = ("This server has one assistant per served agent (assistants.search lists "
                  "it); it changes only with the agent's code.")
_NO_GRAPH = ("An interlock agent is not a LangGraph graph: it has no nodes, edges or state "
             "schema to show. Its input is {'messages': [{'role': 'user', 'content': ...}]}, "
             "assistants.get names its tools, and each interrupt carries response_schema, "
             "the JSON schema of the resume that answers it.")

UNSUPPORTED = [
    ("POST", "/threads/{thread_id}/runs/{run_id}/cancel", "Cancelling a run",
     "A run ends when it pauses for review or finishes; to close the thread's pending calls, "
     "send a run with command = {'goto': '__end__'}."),
    ("DELETE", "/threads/{thread_id}/runs/{run_id}", "Deleting a run",
     "Runs are not stored (the thread is); nothing needs deleting."),
    ("DELETE", "/threads/{thread_id}", "Deleting a thread",
     "Threads are kept with their audit log; see docs/durability.md for retention."),
    ("PATCH", "/threads/{thread_id}", "Updating a thread",
     "A thread's metadata is set when it is created."),
    ("POST", "/threads/{thread_id}/copy", "Copying a thread", "Start a new thread instead."),
    ("POST", "/threads/count", "Counting threads",
     "Use threads.search (or GET /api/threads?count=true)."),
    ("POST", "/threads/prune", "Pruning threads",
     "Threads are kept with their audit log; see docs/durability.md for retention."),
    ("GET", "/threads/{thread_id}/stream", "Streaming a thread (threads.join_stream)",
     _FOLLOW),
    ("GET", "/threads/{thread_id}/runs/{run_id}/stream", "Re-joining a run's stream "
     "(runs.join_stream, Last-Event-ID)", _FOLLOW),
    ("POST", "/runs/batch", "Creating runs in a batch", "Create each run with runs.create."),
    ("POST", "/runs/cancel", "Cancelling runs",
     "A run ends when it pauses for review or finishes; to close a thread's pending calls, "
     "send a run with command = {'goto': '__end__'}."),
    *[(method, path, what, _ONE_ASSISTANT) for method, path, what in (
        ("POST", "/assistants", "Creating an assistant"),
        ("PATCH", "/assistants/{assistant_id}", "Updating an assistant"),
        ("DELETE", "/assistants/{assistant_id}", "Deleting an assistant"),
        ("POST", "/assistants/{assistant_id}/versions", "Listing an assistant's versions"),
        ("POST", "/assistants/{assistant_id}/latest", "Changing an assistant's version"),
        ("POST", "/assistants/count", "Counting assistants"))],
    *[("GET", path, what, _NO_GRAPH) for path, what in (
        ("/assistants/{assistant_id}/graph", "Reading an assistant's graph"),
        ("/assistants/{assistant_id}/schemas", "Reading an assistant's schemas"),
        ("/assistants/{assistant_id}/subgraphs", "Reading an assistant's subgraphs"),
        ("/assistants/{assistant_id}/subgraphs/{namespace}", "Reading an assistant's subgraphs"))],
    *[(method, path, "Scheduling runs (crons)",
       "Start runs from your own scheduler with runs.create.") for method, path in (
        ("POST", "/runs/crons"), ("POST", "/threads/{thread_id}/runs/crons"),
        ("PATCH", "/runs/crons/{cron_id}"), ("DELETE", "/runs/crons/{cron_id}"),
        ("POST", "/runs/crons/search"), ("POST", "/runs/crons/count"))],
    *[(method, path, "The store",
       "interlock keeps an agent's state in its threads; it has no key-value store.")
      for method, path in (("PUT", "/store/items"), ("GET", "/store/items"),
                           ("DELETE", "/store/items"), ("POST", "/store/items/search"),
                           ("POST", "/store/namespaces"))],
]
"""(method, path, what, what to do instead) of the LangGraph operations interlock refuses."""


def _refusal(what: str, instead: str) -> Callable[..., Awaitable[None]]:
    async def refuse(caller: Caller) -> None:  # authenticated first, as every route
        raise ApiError(422, "UnsupportedOperation",
                       f"{what} is not supported by interlock's LangGraph API. {instead}")
    return refuse


async def _search(api: LangGraphAPI, caller: Identity, body: ThreadSearch,
                  fmt: Format) -> list[dict[str, Any]]:
    """Threads the caller may read (the same rule as ``/api``), filtered as asked, with only
    the fields selected and the values extracted."""
    fields = check_select(body.select, THREAD_FIELDS, "thread")
    paths = check_extract(body.extract)
    if body.values:
        raise _unsupported("UnsupportedFilter",
                           "Searching threads by 'values' is not supported; filter by status, "
                           "metadata (graph_id / assistant_id) or ids.")
    if body.sort_by not in (None, "updated_at") or body.sort_order not in (None, "desc"):
        raise _unsupported("UnsupportedSort",
                           "Threads are listed most recently updated first only "
                           "(sort_by='updated_at', sort_order='desc').")
    meta = api.assistant.metadata()
    if any(k in meta and not metadata_matches({k: meta[k]}, {k: v})
           for k, v in (body.metadata or {}).items()):
        return []
    wanted = STATUSES_FOR[body.status] if body.status else None
    end = body.offset + body.limit
    found: list[tuple[datetime, dict[str, Any]]] = []
    if body.ids is not None:
        for tid in dict.fromkeys(body.ids):
            try:
                current = await api.load(tid, caller)
            except NotAuthorized:
                continue
            if current is not None and (wanted is None or current.status in wanted) and \
                    metadata_matches({**current.metadata, **meta}, body.metadata):
                found.append((current.updated_at,
                              thread_json(api.note(caller, current), fmt, api.assistant)))
    else:
        rows = []
        for status in wanted or (None,):
            rows += await _listed(api, caller, status, end, body.metadata)
        rows.sort(key=lambda r: r.updated_at, reverse=True)
        for r in rows[:end]:
            current = await api.load(r.thread_id, caller)
            if current is not None:
                found.append((current.updated_at,
                              thread_json(api.note(caller, current), fmt, api.assistant)))
    if wanted is None or "idle" in wanted:
        ids = set(body.ids) if body.ids is not None else None
        found += [(new.created_at, api.new_json(tid))
                  for tid, new in api.new_threads_of(caller)
                  if (ids is None or tid in ids) and metadata_matches(
                      {**new.metadata, **meta}, body.metadata)]
    found.sort(key=lambda item: item[0], reverse=True)
    return [selected(thread, fields) | ({"extracted": extracted(thread, paths)} if paths else {})
            for _, thread in found[body.offset:end]]


async def _listed(api: LangGraphAPI, caller: Identity, status: str | None, end: int,
                  metadata: dict[str, Any] | None) -> list[ThreadRecord]:
    """The newest ``end`` threads with ``status`` whose metadata contains ``metadata``,
    filtered by the store (a GIN index of the metadata on Postgres). A sub-agent's thread is
    left out: its requests are interrupts of its parent. The assistant's own keys
    (``graph_id``, ``assistant_id``) hold for every thread and are not passed on."""
    meta = api.assistant.metadata()
    stored = {k: v for k, v in (metadata or {}).items() if k not in meta}
    return await api.state.agent.alist_threads(
        status=status, limit=end, reviewer=caller.reviewer(), top_level=True,
        metadata=stored or None)

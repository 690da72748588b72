"""The HTTP API (mounted under ``/api``). See docs/server.md for examples."""

from __future__ import annotations

import functools
import math
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import AfterValidator

from .. import subagent_tree as agent_tree
from ..audit.verify import AuditHead, AuditReport
from ..authz import check_admin, facts_of, may_read
from ..decisions import check_shown, unkeyed_calls
from ..paging import Cursor, thread_page
from ..result import RunResult
from ..storage.base import HealthCheck
from ..text import check_input
from .auth import LOCAL_IDENTITY, Identity
from .errors import ApiError, unauthorized
from .hub import INBOX, thread_topic
from .sse import stream
from .state import ServerState, get_state
from .views import (
    Accepted,
    AuditPage,
    AuditProblemOut,
    ErrorBody,
    Health,
    Me,
    PostAnswer,
    PostCancel,
    PostDecisions,
    PostMessage,
    RememberedList,
    Revoked,
    RunOutcome,
    StartRun,
    ThreadDetail,
    ThreadList,
    ThreadStatusName,
    VerifyAgainstHead,
    VerifyResult,
    thread_detail,
    thread_summary,
)

_bearer = HTTPBearer(auto_error=False, description="A reviewer token (see docs/server.md).")

State = Annotated[ServerState, Depends(get_state)]


def caller_for(request: Request, state: ServerState, token: str | None, *,
               how: str) -> Identity:
    """The identity of ``token``; the local reviewer when no tokens are configured. A client
    with too many failed attempts is refused (429) until they age out. ``how`` tells the client
    how to send a token (in the 401 message)."""
    if state.auth is None:
        return LOCAL_IDENTITY
    client = request.client.host if request.client else ""
    presented = (token or "").strip()
    throttle = state.throttle
    wait = throttle.retry_after(client, presented)
    if wait is not None:
        seconds = max(1, math.ceil(wait))
        what = (f"from this address ({throttle.per_address} within {throttle.window:g} s)"
                if throttle.address_blocked(client) else
                f"with this token ({throttle.attempts} within {throttle.window:g} s)")
        raise ApiError(
            429, "TooManyAttempts",
            f"Too many failed token attempts {what}; try again in {seconds} s, with a valid "
            f"token.", {"Retry-After": str(seconds)})
    if not presented:
        raise unauthorized(f"Send a reviewer token: {how}.")
    found = state.auth.authenticate(presented)
    if found is None:
        throttle.failed(client, presented)
        raise unauthorized("The token is not valid.")
    if found.expires_at is not None and datetime.now(UTC) >= found.expires_at:
        throttle.failed(client, presented)
        raise unauthorized(f"The token of {found.id!r} expired at "
                           f"{found.expires_at.isoformat()}; ask for a new one.")
    return found


async def identity(
    request: Request,
    state: State,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Identity:
    """The caller, from the bearer token; the local reviewer when no tokens are configured."""
    bearer = None
    if credentials is not None and credentials.scheme.lower() == "bearer":
        bearer = credentials.credentials
    return caller_for(request, state, bearer, how="'Authorization: Bearer <token>'")


Caller = Annotated[Identity, Depends(identity)]
def _storable(value: str) -> str:
    check_input(value, "the path or query parameter")  # InvalidText is a ValueError: 422
    return value


ThreadId = Annotated[str, AfterValidator(_storable)]
ToolName = Annotated[str, AfterValidator(_storable)]
Storable = Annotated[str, AfterValidator(_storable)]
"""Any other id or text of a path or query that a store is asked about: NUL and lone
surrogates are refused (422), never sent to the database (Postgres refuses NUL: a 503)."""
MAX_ROW_ID = 2**63 - 1
"""The largest id a row can have (a signed 64-bit integer, in SQLite and Postgres)."""
Wait = Annotated[bool, Query(description="Wait for the run to pause or finish and return its "
                                         "outcome (200) instead of 202.")]


def _err(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {c: {"model": ErrorBody} for c in codes}


router = APIRouter(prefix="/api")


def _urls(request: Request, thread_id: str, after: str) -> Accepted:
    root = request.scope.get("root_path", "")
    base = f"{root}/api/threads/{quote(thread_id, safe='')}"
    return Accepted(thread_id=thread_id, thread_url=base,
                    events_url=f"{base}/events?after={quote(after)}")


def _outcome(request: Request, state: ServerState, caller: Identity, thread_id: str,
             after: str, result: RunResult | None) -> JSONResponse:
    if result is not None:  # it shows the requests the run raised
        state.shown.note(caller.id, result.thread_id, result.interrupts)
    if result is None:
        body = _urls(request, thread_id, after)
        return JSONResponse(body.model_dump(mode="json"), status_code=202,
                            headers={"Location": body.thread_url})
    return JSONResponse(result.to_json(), status_code=200)


_RUN_RESPONSES: dict[int | str, dict[str, Any]] = {
    202: {"model": Accepted, "description": "Stored; the run continues in the background."},
    200: {"model": RunOutcome, "description": "With ?wait=true: how the run ended."},
}


@router.get("/health", response_model=Health, tags=["server"],
            responses={503: {"model": Health, "description": "The store takes no writes."}})
async def health(state: State) -> Health | JSONResponse:
    """Liveness and whether the store takes writes (no authentication); 503 when it does not
    (a standby, a read-only or unreachable database)."""
    store = state.agent.checkpointer
    body = Health(ok=True, checkpointer=type(store).__name__,
                  live_updates=state.watcher.live_updates())
    if isinstance(store, HealthCheck):
        checked = await store.health()
        body.ok, body.writes, body.write_error = checked.writes, checked.writes, checked.reason
        body.live_updates_error = checked.live_reason
    if not body.ok:
        return JSONResponse(body.model_dump(mode="json"), status_code=503)
    return body


@router.get("/me", response_model=Me, tags=["server"], responses=_err(401))
async def me(caller: Caller) -> Me:
    """The identity of the token (``local`` without tokens)."""
    return Me(id=caller.id, roles=sorted(caller.roles), auth=caller.authenticated)


# -- threads ----------------------------------------------------------------------------------


@router.get("/threads", response_model=ThreadList, tags=["threads"], responses=_err(401))
async def list_threads(
    state: State,
    caller: Caller,
    status: Annotated[ThreadStatusName | None, Query(
        description="interrupted = the inbox of pending requests")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    before: Annotated[datetime | None, Query(
        description="Only threads updated before this time (the previous page's next_before)."
    )] = None,
    before_id: Annotated[Storable | None, Query(
        description="With before: the previous page's next_before_id, so that threads with "
        "the same updated_at are neither skipped nor repeated.")] = None,
    q: Annotated[str | None, Query(
        max_length=200, description="Only threads whose id, latest message or pending "
        "requests (tool names, arguments, questions) contain this text, ignoring case.")] = None,
    count: Annotated[bool, Query(
        description="Also return how many threads match (total; admins and local mode "
        "only, null for other reviewers).")] = False,
    subagents: Annotated[bool, Query(
        description="Also list the threads of sub-agents (Agent.as_tool). By default they are "
        "left out: their requests are shown, and decided, on the parent thread.")] = False,
) -> ThreadList:
    """Threads, most recently updated first: those the caller may read (docs/security.md).
    Sub-agents' threads are listed only with ``?subagents=true`` (docs/subagents.md)."""
    search = q.strip() if q and q.strip() else None
    cursor = Cursor(before, before_id) if before is not None and before_id is not None else None
    lister = functools.partial(state.agent.alist_threads, reviewer=caller.reviewer(),
                               top_level=not subagents)
    if cursor is None and before is not None:  # a time alone: everything older than it
        page = await lister(status=status, limit=limit + 1, before=before, search=search)
        rows, nxt = page[:limit], (Cursor.after(page[limit - 1]) if len(page) > limit else None)
    else:
        rows, nxt = await thread_page(lister, status=status, limit=limit, cursor=cursor,
                                      search=search)
    for r in rows:  # the rows show the threads' pending requests
        state.shown.note(caller.id, r.thread_id, r.pending)
    total = (await state.agent.acount_threads(status=status, search=search,
                                              reviewer=caller.reviewer(),
                                              top_level=not subagents)) if count else None
    return ThreadList(threads=[thread_summary(r) for r in rows],
                      next_before=nxt.updated_at if nxt else None,
                      next_before_id=nxt.thread_id if nxt else None, total=total)


@router.post("/threads", status_code=202, tags=["threads"],
             responses={**_RUN_RESPONSES, **_err(401, 409)})
async def start_run(request: Request, state: State, caller: Caller, body: StartRun,
                    wait: Wait = False) -> JSONResponse:
    """Send a user message to a new thread (or to ``thread_id``) and run the agent. A new
    thread is owned by the caller; an existing one takes messages from its creator and admins."""
    state.limits.text("message", body.message)
    thread_id = body.thread_id or uuid.uuid4().hex
    after = state.hub.last_id()
    result = await state.runner.start(thread_id, body.message, reviewer=caller.reviewer(),
                                      wait=wait)
    return _outcome(request, state, caller, thread_id, after, result)


@router.get("/threads/{thread_id}", response_model=ThreadDetail, tags=["threads"],
            responses=_err(401, 404))
async def get_thread(state: State, caller: Caller, thread_id: ThreadId) -> ThreadDetail:
    """A thread: its messages, pending requests, every tool call and its audit history."""
    reviewer = caller.reviewer()
    current = await state.agent.aget_thread(thread_id, reviewer=reviewer)
    state.shown.note(caller.id, current.thread_id, current.interrupts)
    return await thread_detail(state.agent, current, reviewer)


@router.get("/threads/{thread_id}/calls/{tool_call_id}", tags=["review"],
            responses=_err(401, 403, 404))
async def call_outcome(state: State, caller: Caller, thread_id: ThreadId,
                       tool_call_id: Storable) -> dict[str, Any]:
    """Who decided one call, what and when. Readable by the thread's readers and by anyone
    who could decide the call, so a reviewer who lost a race to another sees who won it."""
    outcome = await state.agent.acall_outcome(thread_id, tool_call_id,
                                              reviewer=caller.reviewer())
    return outcome.model_dump(mode="json")


@router.post("/threads/{thread_id}/messages", status_code=202, tags=["threads"],
             responses={**_RUN_RESPONSES, **_err(401, 403, 404, 409)})
async def post_message(request: Request, state: State, caller: Caller, thread_id: ThreadId,
                       body: PostMessage, wait: Wait = False) -> JSONResponse:
    """A new user message on an existing thread (409 while it waits for a decision; 403
    unless the caller created the thread or holds the admin role)."""
    state.limits.text("message", body.message)
    await state.agent.aget_thread(thread_id)
    after = state.hub.last_id()
    result = await state.runner.start(thread_id, body.message, reviewer=caller.reviewer(),
                                      wait=wait)
    return _outcome(request, state, caller, thread_id, after, result)


@router.post("/threads/{thread_id}/decisions", status_code=202, tags=["review"],
             responses={**_RUN_RESPONSES, **_err(401, 403, 404, 409, 422)})
async def post_decisions(request: Request, state: State, caller: Caller, thread_id: ThreadId,
                         body: PostDecisions, wait: Wait = False) -> JSONResponse:
    """Approve / edit / reject / respond. The reviewer is the token's owner; a ``reviewer``
    field in the body is ignored. Decisions sent without ``interrupt_id`` decide the pending
    calls by position: refused (409 UnseenRequest) when the request pending now was raised
    after the caller last read the thread through this server process."""
    state.limits.decisions(body.decisions)
    after = state.hub.last_id()
    interrupt_id = body.interrupt_id
    seen = state.shown.get(caller.id, thread_id) if interrupt_id is None else None
    if seen is not None:
        current = await state.agent.aget_thread(thread_id, reviewer=caller.reviewer())
        calls = unkeyed_calls(current.interrupts, body.decisions, None)
        check_shown(thread_id, current.interrupts, calls, seen)
        if calls:  # bound to the request checked (a newer one meanwhile: 409, not decided)
            interrupt_id = next(i.id for i in current.interrupts if i.kind == "review")
    result = await state.runner.resume(
        thread_id, body.decisions, interrupt_id=interrupt_id,
        reviewer=caller.reviewer(), actor=caller.id, wait=wait)
    return _outcome(request, state, caller, thread_id, after, result)


@router.post("/threads/{thread_id}/answer", status_code=202, tags=["review"],
             responses={**_RUN_RESPONSES, **_err(401, 403, 404, 409, 422)})
async def post_answer(request: Request, state: State, caller: Caller, thread_id: ThreadId,
                      body: PostAnswer, wait: Wait = False) -> JSONResponse:
    """Answer a pending ``interrupt(...)`` question."""
    state.limits.json_value("value", body.value, "max_answer_bytes",
                            state.limits.max_answer_bytes)
    after = state.hub.last_id()
    result = await state.runner.answer(
        thread_id, body.value, interrupt_id=body.interrupt_id,
        reviewer=caller.reviewer(), actor=caller.id, wait=wait)
    return _outcome(request, state, caller, thread_id, after, result)


@router.post("/threads/{thread_id}/cancel", response_model=RunOutcome, tags=["review"],
             responses=_err(401, 403, 404, 409))
async def cancel(state: State, caller: Caller, thread_id: ThreadId,
                 body: PostCancel | None = None) -> JSONResponse:
    """Close every pending call with a "cancelled by reviewer" result; the thread goes idle.
    Needs a role allowed to decide every pending request."""
    state.limits.text("reason", body.reason if body else None)
    result = await cancel_thread(state, caller, thread_id, body.reason if body else None)
    # the thread's own status (idle: ready for a new message), as GET /threads/{id} says
    answer = result.to_json()
    answer["status"] = (await state.agent.aget_thread(thread_id)).status
    return JSONResponse(answer)


async def cancel_thread(state: ServerState, caller: Identity, thread_id: str,
                        reason: str | None) -> RunResult:
    """Cancel every pending call of the thread (the core checks that ``caller`` may decide
    each of them)."""
    result = await state.agent.acancel(thread_id, reason=reason, reviewer=caller.reviewer())
    state.watcher.poke()
    return result


@router.get("/threads/{thread_id}/remembered", response_model=RememberedList,
            tags=["review"], responses=_err(401, 403, 404))
async def remembered(state: State, caller: Caller, thread_id: ThreadId) -> RememberedList:
    """Standing "approve and remember" rules of the thread."""
    return RememberedList(remembered=await state.agent.aremembered(
        thread_id, reviewer=caller.reviewer()))


@router.delete("/threads/{thread_id}/remembered/{tool_name}", response_model=Revoked,
               tags=["review"], responses=_err(401, 403, 404))
async def revoke(state: State, caller: Caller, thread_id: ThreadId, tool_name: ToolName
                 ) -> Revoked:
    """Withdraw the remembered approval for ``tool_name``: its next call pauses again."""
    await state.agent.aget_thread(thread_id)
    if not await state.agent.arevoke(thread_id, tool_name, reviewer=caller.reviewer()):
        raise ApiError(404, "RuleNotFound",
                       f"Thread {thread_id!r} has no remembered approval for {tool_name!r}.")
    state.watcher.poke()
    return Revoked(revoked=True)


# -- audit ------------------------------------------------------------------------------------


async def _audit_page(state: ServerState, caller: Identity, thread_id: str | None,
                      after_id: int, limit: int) -> AuditPage:
    records = await state.agent.aaudit(thread_id, after_id=after_id, limit=limit,
                                       reviewer=caller.reviewer())
    nxt = records[-1].id if len(records) == limit and records else None
    return AuditPage(records=records, next_after_id=nxt)


AfterId = Annotated[int, Query(ge=0, le=MAX_ROW_ID, description="Rows after this global id.")]
Limit = Annotated[int, Query(ge=1, le=5000)]


@router.get("/audit", response_model=AuditPage, tags=["audit"], responses=_err(401, 403))
async def audit(state: State, caller: Caller, thread_id: ThreadId | None = None,
                after_id: AfterId = 0, limit: Limit = 500) -> AuditPage:
    """The audit log in insertion order (all threads the caller may read, or one)."""
    return await _audit_page(state, caller, thread_id, after_id, limit)


async def _verified(state: ServerState, caller: Identity, report: AuditReport) -> VerifyResult:
    """The report, limited to the threads the caller may read (all of them for an admin)."""
    problems = list(report)
    reviewer = caller.reviewer()
    if reviewer is not None and not reviewer.is_admin:
        visible = {t.thread_id async for t in state.agent.aiter_threads()
                   if may_read(reviewer, facts_of(t))}
        # problems of the whole log (thread id "", e.g. against a head) concern no thread
        problems = [p for p in problems if not p.thread_id or p.thread_id in visible]
    return VerifyResult(ok=not problems, unchecked=report.unchecked, problems=[
        AuditProblemOut(thread_id=p.thread_id, seq=p.seq, problem=p.problem) for p in problems])


AllowUnsigned = Annotated[bool, Query(description="Accept the unsigned rows of a database "
                                                  "written before audit rows were signed.")]


@router.get("/audit/verify", response_model=VerifyResult, tags=["audit"],
            responses=_err(401, 403))
async def verify(state: State, caller: Caller, thread_id: ThreadId | None = None,
                 allow_unsigned: AllowUnsigned = False) -> VerifyResult:
    """Check the signed hash chains, and the journal and messages against them; any edited,
    deleted or reordered row and any rewritten argument is reported (docs/security.md).
    Callers without the admin role see the problems of threads they may read."""
    if thread_id is not None:
        await state.agent.aget_thread(thread_id, reviewer=caller.reviewer())
    return await _verified(state, caller, await state.agent.averify_audit(
        thread_id, allow_unsigned=allow_unsigned))


@router.post("/audit/verify", response_model=VerifyResult, tags=["audit"],
             responses=_err(401, 403, 422))
async def verify_against_head(state: State, caller: Caller,
                              body: VerifyAgainstHead) -> VerifyResult:
    """Like ``GET /api/audit/verify``, and also check the log against a head exported
    earlier: a row it covers that was changed, removed or re-signed since is reported.
    Admins only (a head and its check count every thread and row)."""
    # a head summarises the whole log (its thread and row counts): admins only
    check_admin(caller.reviewer(), "check the audit log against an exported head")
    if body.thread_id is not None:
        await state.agent.aget_thread(body.thread_id, reviewer=caller.reviewer())
    return await _verified(state, caller, await state.agent.averify_audit(
        body.thread_id, allow_unsigned=body.allow_unsigned, head=body.head))


@router.get("/audit/head", response_model=AuditHead, tags=["audit"], responses=_err(401, 403))
async def audit_head(state: State, caller: Caller) -> AuditHead:
    """A signed summary of the audit log so far: keep it where the database's users cannot
    write, and later POST it to ``/api/audit/verify``. Admins only (it counts every thread
    and row, like ``?count=true``)."""
    check_admin(caller.reviewer(), "export the audit head (it counts every thread and row)")
    return await state.agent.aexport_audit_head()


@router.get("/threads/{thread_id}/audit", response_model=AuditPage, tags=["audit"],
            responses=_err(401, 404))
async def thread_audit(
    state: State, caller: Caller, thread_id: ThreadId, after_id: AfterId = 0,
    limit: Limit = 500,
    subagents: Annotated[bool, Query(
        description="Also the rows of the threads of its sub-agents (Agent.as_tool), at any "
        "depth, that the caller may read; in insertion order.")] = False,
) -> AuditPage:
    """One thread's audit rows. Rows that link a thread and a sub-agent's thread:
    ``subagent_started`` (on the child: ``parent_thread_id``), ``subagent_waiting`` and
    ``decision_routed`` (on the parent: ``child_thread_id``), and the child's ``decision`` /
    ``input_answered`` rows of a decision given on the parent (``via_thread_id``)."""
    await state.agent.aget_thread(thread_id, reviewer=caller.reviewer())
    if not subagents:
        return await _audit_page(state, caller, thread_id, after_id, limit)
    records = await agent_tree.audit_with_subagents(
        state.agent, thread_id, after_id=after_id, limit=limit, reviewer=caller.reviewer())
    return AuditPage(records=records,
                     next_after_id=records[-1].id if len(records) == limit else None)


# -- live streams -----------------------------------------------------------------------------

_SSE: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {}}, "description": "Server-sent events."},
}
LastEventId = Annotated[str | None, Header(alias="Last-Event-ID")]
After = Annotated[str | None, Query(description="Replay buffered events after this event id.")]


@router.get("/threads/{thread_id}/events", tags=["streams"], response_class=StreamingResponse,
            responses={**_SSE, **_err(401, 403, 404)})
async def thread_events(state: State, caller: Caller, thread_id: ThreadId, after: After = None,
                        last_event_id: LastEventId = None) -> StreamingResponse:
    """SSE: this thread's run events (model_text_delta, tool_call_proposed, interrupt_raised,
    tool_started, tool_finished, run_completed, run_failed) and thread_updated. Ends when the
    caller can no longer read the thread."""
    reviewer = caller.reviewer()
    await state.agent.aget_thread(thread_id, reviewer=reviewer)
    return stream(state, thread_topic(thread_id), last_event_id or after, reviewer,
                  end_when_hidden=True, who=caller.id)


@router.get("/inbox/events", tags=["streams"], response_class=StreamingResponse,
            responses={**_SSE, **_err(401)})
async def inbox_events(state: State, caller: Caller, after: After = None,
                       last_event_id: LastEventId = None) -> StreamingResponse:
    """SSE for every thread the caller may read, from every server process on the same
    database: request_raised, request_resolved, thread_updated (each with the thread's
    summary) and resync."""
    return stream(state, INBOX, last_event_id or after, caller.reviewer(), who=caller.id)


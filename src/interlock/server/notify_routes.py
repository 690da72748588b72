"""Routes for the notification channels: the outbox API, Slack's interactive callbacks and the
confirmation pages of e-mail decision links.

Slack and e-mail decide through the same runner and core decision path as the HTTP API, as
the reviewer their channel maps to (a Slack user listed in the notification configuration; the
reviewer a link was signed for). Neither uses a bearer token: Slack requests are checked with
the app's signing secret, links with their signature, expiry and the request's current state.
A sub-agent's request is decided on the top-most thread its notification names; the core
passes the decision to the sub-agent, whose rules apply.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from .. import display
from ..authz import check_admin, same_reviewer
from ..decisions import Reviewer
from ..errors import InterlockError, NotAuthorized
from ..interrupts import Interrupt
from ..notify import retry_event
from ..notify.config import NotifyConfig, Person
from ..notify.email import Link, LinkRefused, LinkSigner, shown_digests
from ..notify.render import args_text, args_whole, path_lines, visible
from ..outbox import OutboxEvent
from ..review_request import read_request
from ..storage.base import ROW_ONLY
from .api import Caller, Storable, ThreadId
from .errors import ApiError
from .state import ServerState, get_state

State = Annotated[ServerState, Depends(get_state)]
router = APIRouter()


def _config(state: ServerState) -> NotifyConfig:
    if state.notify is None:
        raise ApiError(404, "NotificationsNotConfigured",
                       "This server runs without a notification configuration; start it with "
                       "--notify FILE (see docs/notifications.md).")
    return state.notify


def _reviewer(state: ServerState, person: Person) -> Reviewer:
    """The reviewer ``person`` is now, at decision time: their roles from the notification
    configuration, else from their token. A person whose tokens have all expired may not
    decide (:class:`TokenRevoked`), nor may one without roles of their own whose token was
    removed from the token file."""
    held = state.auth.holder(person.id, datetime.now(UTC)) if state.auth is not None else None
    if person.roles is not None:
        return Reviewer(person.id, frozenset(person.roles))
    if held is None and state.auth is not None:
        raise NotAuthorized(
            f"Reviewer {person.id!r} has no token any more and no roles of their own in the "
            f"notification configuration, so they cannot decide here. Ask an administrator "
            f"to give them a token again.")
    return Reviewer(person.id, held.roles if held is not None else frozenset())


# -- the outbox -------------------------------------------------------------------------------


@router.get("/api/outbox", tags=["notifications"])
async def list_outbox(
    state: State, caller: Caller,
    status: Annotated[str | None, Query(pattern="^(pending|delivered|dead)$")] = None,
    thread_id: ThreadId | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[dict[str, Any]]:
    """Notification events and their deliveries, oldest first (``status=dead``: the ones that
    gave up; retry them with ``POST /api/outbox/{id}/retry``). Admins only."""
    check_admin(caller.reviewer(), "list the notification outbox")
    events = await state.agent.checkpointer.outbox_list(status=status, thread_id=thread_id,
                                                        limit=limit)
    return [e.model_dump(mode="json") for e in events]


@router.post("/api/outbox/{event_id}/retry", tags=["notifications"])
async def retry_outbox(state: State, caller: Caller, event_id: Storable) -> dict[str, Any]:
    """Deliver a dead event again (its dead deliveries start over; the id stays the same).
    Admins only."""
    check_admin(caller.reviewer(), "retry notification deliveries")
    event: OutboxEvent | None = await retry_event(state.agent.checkpointer, event_id)
    if event is None:
        raise ApiError(404, "EventNotFound",
                       f"There is no dead outbox event {event_id!r}; list them with "
                       f"GET /api/outbox?status=dead.")
    if state.dispatcher is not None:
        state.dispatcher.poke()
    return event.model_dump(mode="json")


# -- Slack ------------------------------------------------------------------------------------


async def _slack_say(state: ServerState, channel: str | None, user: str, text: str) -> None:
    """An ephemeral message only ``user`` sees (best effort)."""
    import asyncio

    from ..notify.slack import web_client

    cfg = _config(state)
    if cfg.slack is None or not channel:
        return
    client = web_client(cfg.slack)
    try:
        await asyncio.to_thread(client.chat_postEphemeral, channel=channel, user=user, text=text)
    except Exception:  # the refusal itself is what matters; Slack may be unreachable
        return


@router.post("/api/slack/interactions", include_in_schema=False)
async def slack_interactions(request: Request, state: State) -> Response:
    from slack_sdk.signature import SignatureVerifier

    from ..notify.slack import ACTION_APPROVE, ACTION_REJECT, shows_args_whole

    cfg = _config(state)
    if cfg.slack is None:
        raise ApiError(404, "SlackNotConfigured", "Slack is not configured on this server.")
    body = await request.body()
    verifier = SignatureVerifier(cfg.slack.signing_secret)
    stamp = request.headers.get("x-slack-request-timestamp", "")
    signature = request.headers.get("x-slack-signature", "")
    # the verifier reads the timestamp as an integer: anything else is a malformed request
    if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= 12 and signature) or \
            not verifier.is_valid(body, stamp, signature):
        return JSONResponse({"error": "InvalidSignature", "message": "The request is not "
                             "signed with this app's signing secret (headers "
                             "X-Slack-Signature and a numeric X-Slack-Request-Timestamp), or "
                             "its timestamp is older than five minutes."}, status_code=401)
    try:
        payload = json.loads(parse_qs(body.decode())["payload"][0])
        user = str(payload["user"]["id"])
        channel = (payload.get("channel") or {}).get("id")
        action = payload["actions"][0]
        action_id = str(action["action_id"])
        value = json.loads(action.get("value") or "{}")
    except (KeyError, IndexError, ValueError, TypeError):
        return Response(status_code=200)  # not an interaction we sent: nothing to do
    kind = ("approve" if action_id.startswith(ACTION_APPROVE) else
            "reject" if action_id.startswith(ACTION_REJECT) else None)
    if kind is None:
        return Response(status_code=200)  # link buttons: Slack opens the inbox
    person = cfg.person(slack_user=user)
    if person is None:
        await _slack_say(state, channel, user,
                         f"interlock: your Slack user {user} is not mapped to a reviewer, so "
                         f"you cannot decide requests here. Ask an administrator to add "
                         f"slack_user = \"{user}\" to your entry in the notification "
                         f"configuration.")
        return Response(status_code=200)
    try:
        await _decide(state, person, str(value["t"]), str(value["i"]), str(value["c"]),
                      str(value["d"]), {"type": kind}, shows_args_whole)
    except (InterlockError, ApiError, KeyError) as exc:
        await _slack_say(state, channel, user, f"interlock: not decided: {_text(exc)}")
    return Response(status_code=200)


def _text(exc: BaseException) -> str:
    return exc.message if isinstance(exc, ApiError) else str(exc)


async def _decide(state: ServerState, person: Person, thread_id: str, interrupt_id: str,
                  call_id: str, digest: str, decision: Mapping[str, Any],
                  shown_whole: Callable[[dict[str, Any]], bool]) -> None:
    """Decide one call as ``person``, if it is still the exact call they were shown: the
    decision names the revision that matched the message's digest, so an edit stored between
    this check and the decision is refused by the core (``StaleRevision``). An approval
    counts only where the surface showed the call's arguments whole (``shown_whole``)."""
    action, config = await _current_call(state, thread_id, interrupt_id, call_id, digest)
    if decision.get("type") == "approve" and not shown_whole(action.args):
        raise ApiError(409, "ArgumentsNotShown",
                       "This call's arguments are too long to be shown here in full, so it "
                       "cannot be approved from here: open the request in the inbox, which "
                       "shows them whole, and approve it there.")
    reviewer = _reviewer(state, person)
    decided = {**decision, "revision": config.revision}
    await state.runner.resume(thread_id, {call_id: decided}, interrupt_id=interrupt_id,
                              reviewer=reviewer, actor=person.id, wait=False)


async def _pending(state: ServerState, thread_id: str, interrupt_id: str) -> Interrupt | None:
    snap = await state.agent.checkpointer.load(thread_id, after_seq=ROW_ONLY)
    return None if snap is None else next(
        (i for i in snap.thread.pending if i.id == interrupt_id), None)


async def _current_call(state: ServerState, thread_id: str, interrupt_id: str, call_id: str,
                        digest: str) -> tuple[Any, Any]:
    """The call as it waits now. A sub-agent's request shown on ``thread_id`` is read from
    the sub-agent's thread that raised it (its approvals so far are recorded there)."""
    review = await _pending(state, thread_id, interrupt_id)
    paths: dict[str, Any] = {}
    if review is not None and review.path:
        paths = read_request(review.value).paths()
        review = await _pending(state, review.path[-1].thread_id, interrupt_id)
    if review is None:
        raise ApiError(409, "RequestGone",
                       "This request is no longer pending (it was decided, cancelled or "
                       "expired). Open the thread in the inbox to see what happened.")
    for a, c in read_request(review.value).pairs():
        if a.tool_call_id == call_id:
            if digest not in shown_digests(a.name, a.args, c.revision):
                raise ApiError(409, "CallChanged",
                               "The call was edited since this message was sent; open the "
                               "request in the inbox to see the call that would run now.")
            return a.model_copy(update={"path": paths.get(call_id, a.path)}), c
    raise ApiError(409, "RequestGone", f"Call {call_id!r} is no longer pending (it was decided).")


# -- e-mail links -----------------------------------------------------------------------------
#
# A link is ``<public_url>/notify/email#<token>``: the token is in the URL's fragment, which
# browsers do not send, so it never reaches this server's access log or a proxy's. The page
# is the same for every link; its script (static/link.js) reads the fragment and posts the
# token in a request body to ``/notify/email/view`` (what the link is for) and
# ``/notify/email/decide`` (the decision). A mail scanner that opens the link sends no token.


def _page(title: str, body: str, status: int = 200, *, static: str = "../../static",
          ) -> HTMLResponse:
    """A page of its own; its script posts with ``fetch`` (same-origin requests carry their
    real ``Origin`` whatever the referrer policy, so the CSRF check accepts them)."""
    headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<meta name='viewport' content='width=device-width'><link rel='icon' href='data:,'>"
        f"<link rel='stylesheet' href='{static}/inbox.css'></head>"
        f"<body><main class='link-page'><h1>{html.escape(title)}</h1>{body}</main></body></html>",
        status_code=status, headers=headers)


def _shell(static: str, api: str, legacy: bool) -> HTMLResponse:
    """The confirmation page before its script has read the link (the same for every link)."""
    return _page("Confirm your decision",
                 f"<div id='link' data-api='{api}'{' data-legacy' if legacy else ''}>"
                 f"<p>Loading the request…</p></div>"
                 f"<noscript><p>This page needs JavaScript to read the decision link. Open the "
                 f"request in the inbox instead.</p></noscript>"
                 f"<script type='module' src='{static}/link.js'></script>", static=static)


def _link(state: ServerState, token: str) -> tuple[Link, Person]:
    cfg = _config(state)
    if cfg.email is None:
        raise ApiError(404, "EmailNotConfigured", "E-mail is not configured on this server.")
    link = LinkSigner(cfg.email.link_secret).check(token, time.time())
    person = cfg.person(pid=link.reviewer)
    if person is None:
        raise LinkRefused(f"Reviewer {link.reviewer!r} is no longer configured for e-mail "
                          f"decisions.")
    return link, person


async def _check(state: ServerState, token: str) -> tuple[Link, Person, Any, Any]:
    link, person = _link(state, token)
    try:
        _reviewer(state, person)
    except NotAuthorized as exc:
        raise LinkRefused(str(exc)) from None
    action, config = await _current_call(state, link.thread_id, link.interrupt_id,
                                         link.tool_call_id, link.digest)
    if any(same_reviewer(a.by, person.id) for a in config.approved_by or []):
        raise LinkRefused("You already approved this call; it waits for other reviewers. "
                          "This link has been used.")
    return link, person, action, config


def _answer(title: str, status: int = 200, **data: Any) -> JSONResponse:
    return JSONResponse({"title": title, **data}, status_code=status,
                        headers={"Cache-Control": "no-store"})


def _refusal(exc: Exception) -> JSONResponse:
    status = 409 if isinstance(exc, ApiError) else 410 if isinstance(exc, LinkRefused) else 400
    return _answer("This link cannot be used", status, message=_text(exc))


async def _token(request: Request) -> tuple[str, dict[str, Any]]:
    """The link's token and the rest of a JSON body (``{"token": ..., ...}``)."""
    try:
        body = json.loads(await request.body())
    except ValueError:
        body = None
    token = body.get("token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token or len(token) > 4096:
        raise ApiError(422, "InvalidRequest",
                       'Send the decision link\'s token as JSON: {"token": "..."}.')
    return token, body


# the most characters of arguments the confirmation page shows; longer ones are cut, and a
# call shown cut is not approved from the page
LINK_PAGE_ARGS = 20000


def _page_shows_whole(args: dict[str, Any]) -> bool:
    return args_whole(args, LINK_PAGE_ARGS)


@router.get("/notify/email", include_in_schema=False)
async def email_page() -> HTMLResponse:
    """The confirmation page of every link (the token stays in the fragment)."""
    return _shell("../static", "email/", legacy=False)


@router.get("/notify/email/{token}", include_in_schema=False)
async def email_page_legacy(token: str) -> HTMLResponse:
    """Links sent before tokens moved to the fragment (``/notify/email/<token>``): the same
    page, whose script reads the token from the path. The access log shows such paths
    redacted (see :mod:`.redact`)."""
    return _shell("../../static", "", legacy=True)


@router.post("/notify/email/view", include_in_schema=False)
async def email_view(request: Request, state: State) -> JSONResponse:
    """What a link is for, as the confirmation page shows it. Never decides anything."""
    try:
        token, _ = await _token(request)
        link, person, action, config = await _check(state, token)
    except (LinkRefused, ApiError) as exc:
        return _refusal(exc)
    found = display.warnings(display.inspect(
        display.call_texts(action.name, action.description, action.args)))
    description = display.shown_description(action.description or "", action.name,
                                             action.args)
    whole = _page_shows_whole(action.args)
    decisions = [d for d in ("approve", "reject") if d in config.allowed_decisions
                 and (whole or d != "approve")]
    return _answer(
        "Confirm your decision", reviewer=person.id, thread=visible(link.thread_id, 200),
        path=path_lines(action.path, link.thread_id), tool=visible(action.name, 200),
        args=args_text(action.args, LINK_PAGE_ARGS), warnings=found,
        note=None if whole or "approve" not in config.allowed_decisions else (
            "The arguments are too long to show here in full, so this page cannot approve "
            "the call: open the request in the inbox, which shows them whole."),
        # without what the page shows anyway (the default description's Tool: / Args: lines)
        description=visible(description, 2000) if description else None,
        approvals_required=config.approvals_required,
        approved_by=[a.by for a in config.approved_by or []],
        decisions=decisions)


@router.post("/notify/email/decide", include_in_schema=False)
async def email_decide(request: Request, state: State) -> JSONResponse:
    """The decision: ``{"token": ..., "decision": "approve"|"reject", "message": ...}``."""
    try:
        token, body = await _token(request)
        kind = body.get("decision")
        raw = body.get("message")
        message = (raw.strip() or None) if isinstance(raw, str) else None
        state.limits.text("message", message)
        link, person, _, config = await _check(state, token)
        if kind not in ("approve", "reject") or kind not in config.allowed_decisions:
            raise ApiError(422, "InvalidDecision",
                           f"{kind!r} is not a decision this link can make.")
        decision: dict[str, Any] = {"type": kind}
        if kind == "reject" and message:
            decision["message"] = message
        await _decide(state, person, link.thread_id, link.interrupt_id, link.tool_call_id,
                      link.digest, decision, _page_shows_whole)
    except (LinkRefused, ApiError) as exc:
        return _refusal(exc)
    except InterlockError as exc:
        return _answer("Not decided", 409, message=str(exc))
    done = "approved" if kind == "approve" else "rejected"
    return _answer("Thank you", message=f"You {done} the call. Your decision is recorded in "
                   f"the audit log as {person.id}.")

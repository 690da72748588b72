"""HTTP status codes for interlock's exceptions, and the error body ``{error, message}``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ..errors import (
    IN_MEMORY_NOTE,
    CallNotFound,
    ConcurrencyError,
    ConfigurationError,
    InterlockError,
    InvalidDecision,
    InvalidText,
    ModelError,
    NoPendingInterrupt,
    NotAuthorized,
    ResumeError,
    StorageError,
    SubAgentThread,
    ThreadInterrupted,
    ThreadNotFound,
    in_other_terms,
)
from ..storage.base import parent_chain


class ApiError(Exception):
    """An error of the HTTP layer itself (authentication, unknown rule, ...)."""

    def __init__(self, status: int, error: str, message: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message
        self.headers = headers


def unauthorized(message: str) -> ApiError:
    return ApiError(401, "Unauthorized", message, {"WWW-Authenticate": 'Bearer realm="interlock"'})


def status_for(exc: InterlockError) -> int:
    """404 unknown thread, 422 invalid decision or unstorable text, 403 role missing, 409
    conflicts, stale or missing requests and acting on a sub-agent's thread, 400 bad input,
    502 model provider failure, 503 storage, else 500."""
    if isinstance(exc, ThreadNotFound | CallNotFound):
        return 404
    if isinstance(exc, SubAgentThread):
        return 409
    if isinstance(exc, InvalidDecision | InvalidText):
        return 422
    if isinstance(exc, NotAuthorized):
        return 403
    if isinstance(exc, ConcurrencyError | ResumeError | ThreadInterrupted):
        return 409
    if isinstance(exc, ConfigurationError):
        return 400
    if isinstance(exc, ModelError):
        return 502
    if isinstance(exc, StorageError):
        return 503
    return 500


def http_terms(exc: NoPendingInterrupt | ThreadInterrupted) -> str:
    """The core's advice names Python calls (``agent.resume(...)``); an HTTP client is told
    the request to send instead."""
    path = "/api/threads/{thread}"
    return in_other_terms(
        exc, not_found="",
        no_pending="Thread {thread!r} has no pending request, so there is nothing to decide "
                   "(it was decided, cancelled or expired, or never asked). To continue it, "
                   "send a new message: POST " + path + "/messages "
                   '{{"message": "..."}}.',
        waiting="Thread {thread!r} is waiting for a decision on interrupt(s) {interrupts}; it "
                "cannot take a new message now. Decide it with POST " + path + "/decisions "
                '{{"interrupt_id": ..., "decisions": [...]}} (GET ' + path + " shows what "
                "waits), or close it with POST " + path + "/cancel.")


def body(error: str, message: str, **extra: object) -> dict[str, object]:
    return {"error": error, "message": message, **extra}


async def interlock_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, InterlockError)
    extra: dict[str, object] = {}
    message = str(exc)
    if isinstance(exc, ThreadNotFound):
        # over HTTP: how to start one here, not the Python call
        message = (f"Thread {exc.thread_id!r} does not exist on this server. Check the id "
                   f"(GET /api/threads lists them), or start it with POST /api/threads "
                   f"{{\"thread_id\": {json.dumps(exc.thread_id)}, \"message\": \"...\"}}."
                   + (f" {IN_MEMORY_NOTE}" if exc.in_memory else ""))
    elif isinstance(exc, NoPendingInterrupt | ThreadInterrupted):
        message = http_terms(exc)
    if isinstance(exc, SubAgentThread):
        extra = {"thread_id": exc.thread_id, "parent_thread_id": exc.parent_id,
                 "root_thread_id": await _root(request, exc)}
    return JSONResponse(body(type(exc).__name__, message, **extra),
                        status_code=status_for(exc))


async def _root(request: Request, exc: SubAgentThread) -> str:
    """The top-most thread above a sub-agent's thread: where its requests are decided."""
    state = getattr(request.app.state, "interlock", None)
    if state is None:
        return exc.parent_id
    try:
        chain = await parent_chain(state.agent.checkpointer, exc.thread_id)
    except InterlockError:
        return exc.parent_id
    return chain[-1].thread_id if chain else exc.parent_id


async def api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return JSONResponse(body(exc.error, exc.message), status_code=exc.status,
                        headers=exc.headers)


_SURROGATE = ("contains a lone surrogate (U+D800-U+DFFF, half of a UTF-16 pair); text with NUL "
              "characters or lone surrogates cannot be stored: remove it and send the request "
              "again. Nothing was stored")


def _message(error: Any) -> str:
    if error.get("type") == "string_unicode":  # the JSON parser's words for a lone surrogate
        return _SURROGATE
    return str(error.get("msg", "invalid"))


_DECISIONS_SHAPE = ('"decisions" is a list with one decision per pending call '
                    '([{"type": "approve"}]) or an object keyed by tool_call_id '
                    '({"call_1_0": {"type": "approve"}})')
_JSON_BODY = 'send the body as a JSON object with the header "Content-Type: application/json"'


def _parts(errors: Sequence[Any]) -> tuple[list[str], list[str]]:
    """Each error as ``loc: message``, and how to fix the request. The two halves of a union
    (``decisions`` as a list or an object) are said once, as the shape to send."""
    parts: list[str] = []
    hints: list[str] = []
    for e in errors:
        loc = tuple(str(p) for p in e.get("loc", ()))
        if loc[:2] == ("body", "decisions") and len(loc) == 3 and loc[2].startswith(
                ("list[", "dict[")):
            if _DECISIONS_SHAPE not in hints:
                parts.append("body.decisions: neither a list nor an object")
                hints.append(_DECISIONS_SHAPE)
            continue
        parts.append(f"{'.'.join(loc)}: {_message(e)}")
        not_json = e.get("type") == "json_invalid" or (
            loc == ("body",) and e.get("type") in ("model_attributes_type", "dict_type"))
        if not_json and _JSON_BODY not in hints:
            hints.append(_JSON_BODY)
    return parts, hints


async def validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    parts, hints = _parts(errors)
    fix = f" To fix it: {'; '.join(hints)}." if hints else ""
    return JSONResponse(
        body("RequestValidationError",
             "The request is not valid: " + "; ".join(parts) + "." + fix,
             detail=[{"loc": list(e.get("loc", ())), "msg": _message(e)} for e in errors]),
        status_code=422,
    )


async def http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    name = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
    return JSONResponse(body(name, str(exc.detail)), status_code=exc.status_code,
                        headers=exc.headers)


def install(app: FastAPI) -> None:
    """Answer interlock's errors, the HTTP layer's own and invalid requests with the error body
    and the status codes above."""
    app.add_exception_handler(InterlockError, interlock_error)
    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)

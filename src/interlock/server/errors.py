"""HTTP status codes for interlock's exceptions, and the error body ``{error, message}``."""

from __future__ import annotations

import json
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
    NotAuthorized,
    ResumeError,
    StorageError,
    SubAgentThread,
    ThreadInterrupted,
    ThreadNotFound,
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


async def validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    parts = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {_message(e)}" for e in errors]
    return JSONResponse(
        body("RequestValidationError", "The request is not valid: " + "; ".join(parts) + ".",
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

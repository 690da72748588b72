"""Helpers shared by the provider adapters: JSON arguments, provider errors."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import threading
import weakref
from collections.abc import AsyncGenerator, Callable
from typing import Any, Generic, TypeVar

from ..errors import ConfigurationError, ModelError

C = TypeVar("C")

MAX_SHOWN = 200
"""How many characters of a bad argument string are quoted in ``ToolCall.args_error``."""


def dumps(value: Any) -> str:
    """JSON text with non-ASCII characters (Chinese, emoji ...) kept as they are."""
    return json.dumps(value, ensure_ascii=False)


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """The model's tool arguments as ``(args, args_error)``.

    ``raw`` is a JSON string (OpenAI) or an already decoded value (Anthropic). Anything that is
    not a JSON object gives ``({}, reason)``: the call is never run with guessed arguments.
    An empty string means "no arguments" (some servers send ``""`` for parameterless tools).
    """
    if isinstance(raw, dict):
        return dict(raw), None
    if raw is None:
        return {}, None
    if not isinstance(raw, str):
        return {}, f"arguments must be a JSON object, got {type(raw).__name__}: {_shown(raw)}"
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return {}, f"arguments are not valid JSON ({exc}): {_shown(raw)}"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}: {_shown(raw)}"
    return value, None


def check_request_options(owner: str, method: Callable[..., Any], options: dict[str, Any]
                          ) -> None:
    """Refuse request options the installed SDK's ``create`` does not take (they would fail
    at the first model call, deep inside a run)."""
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # no signature to check against
        return
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(set(options) - set(params))
    if unknown:
        raise ConfigurationError(
            f"{owner}: the installed SDK does not accept {', '.join(map(repr, unknown))} as "
            f"request option(s). Check the spelling, or send provider-specific fields with "
            f"extra_body={{{unknown[0]!r}: ...}}."
        )


def _shown(raw: Any) -> str:
    text = raw if isinstance(raw, str) else repr(raw)
    if len(text) > MAX_SHOWN:
        text = text[:MAX_SHOWN] + f"... ({len(text)} characters)"
    return repr(text)


def _body_message(body: Any) -> str | None:
    """The human-readable message in a provider's JSON error body, if there is one.

    OpenAI (and most compatible servers): ``{"error": {"message": ...}}``; Anthropic:
    ``{"type": "error", "error": {"type": ..., "message": ...}}``; some servers use
    ``{"error": "text"}`` or ``{"message": ...}`` / ``{"detail": ...}``.
    """
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, str) and err:
            return err
        if isinstance(err, dict):
            for key in ("message", "detail"):
                msg = err.get(key)
                if isinstance(msg, str) and msg:
                    kind = err.get("type")
                    return f"{msg} ({kind})" if isinstance(kind, str) and kind else msg
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return None


def _hint(status: int | None, env_key: str, env_url: str) -> str:
    if status in (401, 403):
        return (f"Check the API key: pass api_key=... or set {env_key} (and that the key may use "
                f"this model).")
    if status == 404:
        return (f"Check the model name and the base URL (base_url=... or {env_url}); an "
                f"OpenAI-compatible server usually needs the URL ending in /v1.")
    if status in (400, 413, 422):
        return "The provider refused the request; see its message above."
    if status == 429:
        return ("The provider is rate limiting or out of quota. Wait and retry the run "
                "(agent.recover(thread_id)), or raise max_retries=... so the SDK waits longer.")
    if status is not None and status >= 500:
        return ("The provider failed. The thread is unchanged: retry the run later with "
                "agent.recover(thread_id).")
    return "The thread is unchanged: retry the run with agent.recover(thread_id)."


def provider_error(
    exc: BaseException,
    *,
    provider: str,
    sdk: Any,
    base_error: type[BaseException],
    base_url: str,
    max_retries: int,
    env_key: str,
    env_url: str,
) -> ModelError | None:
    """Translate an SDK / transport / decoding failure into :class:`ModelError`.

    ``sdk`` is the imported SDK module (``openai`` or ``anthropic``); both have the same
    exception family (``APIStatusError``, ``APITimeoutError``, ``APIConnectionError``,
    ``APIError``) under ``base_error`` (``OpenAIError`` / ``AnthropicError``). Returns None
    for exceptions that are not provider failures (bugs, cancellation), which the caller
    re-raises unchanged.
    """
    retries = f"after {max_retries} retr{'y' if max_retries == 1 else 'ies'}"
    # connection failures are retried when they happen before the reply starts, not when a
    # stream breaks off, so only the setting is reported
    setting = f"SDK max_retries={max_retries}"
    if isinstance(exc, sdk.APIStatusError) and int(exc.status_code) < 400:
        # an error event inside a stream that started with HTTP 200
        text = _body_message(exc.body) or str(exc.message)
        return ModelError(
            f"{text} [error event in the stream from {base_url}]. The provider failed while "
            f"replying; the thread is unchanged: retry the run with agent.recover(thread_id).",
            provider=provider)
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        text = _body_message(exc.body) or str(exc.message)
        request_id = getattr(exc, "request_id", None)
        rid = f", request id {request_id}" if request_id else ""
        where = f"HTTP {status} from {base_url}{rid}"
        if status in (408, 409, 429) or status >= 500:
            where += f", {retries}"
        return ModelError(f"{text} [{where}]. {_hint(status, env_key, env_url)}",
                          provider=provider, status_code=status)
    if isinstance(exc, sdk.APITimeoutError):
        return ModelError(
            f"request to {base_url} timed out ({setting}). Raise timeout=... if the model "
            f"needs longer, or check that the server is running.", provider=provider)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f": {type(cause).__name__}: {cause}" if cause is not None else ""
        return ModelError(
            f"the connection to {base_url} failed{detail} ({setting}). Check base_url=... / "
            f"{env_url} and that the server is reachable, then retry the run with "
            f"agent.recover(thread_id).", provider=provider)
    if isinstance(exc, sdk.APIError):
        # e.g. an error object inside an SSE stream, or a response that failed validation
        text = _body_message(getattr(exc, "body", None)) or str(exc)
        return ModelError(
            f"{text} [error in the reply from {base_url}]. The provider failed while replying; "
            f"the thread is unchanged: retry the run with agent.recover(thread_id).",
            provider=provider)
    if isinstance(exc, json.JSONDecodeError):
        return malformed(provider, base_url, f"the reply is not valid JSON ({exc})")
    if isinstance(exc, base_error):
        return ModelError(f"{exc} [{base_url}]", provider=provider)
    if _is_transport_error(exc):
        return ModelError(
            f"the connection to {base_url} failed while reading the reply: "
            f"{type(exc).__name__}: {exc}. Retry the run with agent.recover(thread_id).",
            provider=provider)
    return None


def _is_transport_error(exc: BaseException) -> bool:
    """An HTTP transport error (httpx / httpcore family) raised while a stream is read."""
    module = type(exc).__module__.split(".")[0]
    return module in ("httpx", "httpx2", "httpcore", "httpcore2", "h11", "h2")


def malformed(provider: str, base_url: str, problem: str) -> ModelError:
    """A reply that parsed but is not what the provider's protocol says it should be."""
    return ModelError(
        f"malformed reply from {base_url}: {problem}. Check that the base URL points at a "
        f"server that speaks this provider's API; the thread is unchanged and the run can be "
        f"retried with agent.recover(thread_id).",
        provider=provider,
    )


async def _closed_with_its_loop(client: Any) -> AsyncGenerator[None, None]:
    """Started when a loop gets a client of its own; the loop's shutdown (``asyncio.run``,
    ``asyncio.Runner.close``: ``shutdown_asyncgens``) resumes it, and the client's connections
    are closed in the loop they belong to."""
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await client.close()


def _close_with_loop(client: Any) -> object:
    """Tie ``client`` to the running loop's shutdown (see :func:`_closed_with_its_loop`);
    the generator to keep referenced while the client is in use."""
    gen = _closed_with_its_loop(client)
    step = gen.asend(None)  # first iteration: the running loop now tracks the generator
    with contextlib.suppress(StopIteration):
        step.send(None)  # runs to the ``yield`` at once (nothing before it awaits)
    return gen


class ClientPerLoop(Generic[C]):
    """One SDK client per event loop.

    An async SDK client keeps a pool of connections that belong to the event loop that opened
    them; using the client from another loop (``asyncio.run`` twice, e.g. once to start a run
    and once to resume it, or the sync API from several threads) fails with "Event loop is
    closed". Clients the adapter built itself are therefore made once per loop from the same
    settings, and closed when that loop shuts down: an SDK client collected later would
    otherwise try to close its connections from whichever loop runs then. A client passed in
    by the user (``factory=None``) is always used as given.
    """

    def __init__(self, first: C, factory: Callable[[], C] | None) -> None:
        self.first = first
        self._unused: C | None = first
        self._factory = factory
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[C, object]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def get(self) -> C:
        """The client for the running event loop."""
        if self._factory is None:
            return self.first
        loop = asyncio.get_running_loop()
        with self._lock:
            made = self._by_loop.get(loop)
            if made is not None:
                return made[0]
            if self._unused is not None:
                client, self._unused = self._unused, None
            else:
                client = self._factory()
            self._by_loop[loop] = (client, _close_with_loop(client))
            return client

    def pop_current(self) -> C | None:
        """Forget and return the client of the running loop (None for a user's client, which
        its owner closes, or when this loop has none)."""
        if self._factory is None:
            return None
        with self._lock:
            made = self._by_loop.pop(asyncio.get_running_loop(), None)
        return None if made is None else made[0]


def incomplete(provider: str, base_url: str, problem: str) -> ModelError:
    """A streamed reply that stopped before its end (the connection was cut)."""
    return ModelError(
        f"incomplete reply from {base_url}: {problem}. Nothing was stored; retry the run with "
        f"agent.recover(thread_id).",
        provider=provider,
    )

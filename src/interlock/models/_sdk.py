"""What the SDK-backed adapters share: client set-up, error mapping, the request/stream loops."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Generic, NoReturn, Protocol, TypeVar

from ..errors import ConfigurationError, ModelError
from ..messages import AssistantMessage, Message
from ..tools import Tool
from ._common import ClientPerLoop, check_request_options, malformed

C = TypeVar("C")

SHAPE_ERRORS = (AttributeError, TypeError, ValueError, IndexError, KeyError)
"""What a reply of an unexpected shape raises while it is read."""


class StreamState(Protocol):
    def add(self, event: Any) -> str:
        """Take one streamed event; return its text delta ("" when it has none)."""
        ...

    def finish(self, provider: str, base_url: str) -> AssistantMessage:
        """The complete message; raises ModelError if the stream stopped early."""
        ...


def client_options(
    *, api_key: str | None, base_url: str | None, timeout: Any, max_retries: int | None
) -> dict[str, Any]:
    """The SDK client settings that were given (None keeps the SDK's default)."""
    given = {"api_key": api_key, "base_url": base_url, "timeout": timeout,
             "max_retries": max_retries}
    return {k: v for k, v in given.items() if v is not None}


class SdkChat(Generic[C]):
    """Base of :class:`OpenAIChat` and :class:`AnthropicChat`."""

    provider: str
    model: str
    request_options: dict[str, Any]
    client: C
    """The SDK client as configured. When the adapter built it, requests from another event
    loop use a fresh client with the same settings (see ``ClientPerLoop``)."""
    _clients: ClientPerLoop[C]

    def _setup(
        self,
        *,
        make: Callable[..., C],
        client: C | None,
        options: dict[str, Any],
        client_errors: tuple[type[BaseException], ...],
        hint: str,
        reserved: frozenset[str],
        reserved_hint: str = "",
    ) -> None:
        owner = f"{type(self).__name__}({self.model!r})"
        clash = sorted(reserved & set(self.request_options))
        if clash:
            raise ConfigurationError(
                f"{owner}: {', '.join(clash)} cannot be given as request options; interlock "
                f"sets them for every call{reserved_hint}."
            )
        own = client is None
        try:
            if client is None:
                client = make(**options)
            elif options:
                client = client.with_options(**options)  # type: ignore[attr-defined]
        except client_errors as exc:
            raise ConfigurationError(
                f"{owner} cannot create the {self.provider} client: {exc} {hint}"
            ) from None
        assert client is not None
        check_request_options(owner, self._create(client), self.request_options)
        self.client = client
        self._clients = ClientPerLoop(client, (lambda: make(**options)) if own else None)

    # -- what each provider defines --------------------------------------------------------

    def _create(self, client: C) -> Callable[..., Awaitable[Any]]:
        """The SDK method that sends a request."""
        raise NotImplementedError

    def request_params(
        self, messages: Sequence[Message], tools: Sequence[Tool], *, stream: bool = False
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _error(self, exc: BaseException) -> ModelError | None:
        """The ModelError for an SDK exception, None for anything else."""
        raise NotImplementedError

    def _parse(self, response: Any) -> AssistantMessage:
        raise NotImplementedError

    def _stream_state(self) -> StreamState:
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return str(self.client.base_url)  # type: ignore[attr-defined]

    @property
    def max_retries(self) -> int:
        return int(self.client.max_retries)  # type: ignore[attr-defined]

    @property
    def timeout(self) -> Any:
        return self.client.timeout  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the connections this adapter opened from the running event loop (call it at
        shutdown of a long-lived application). A later request opens new ones. A client passed
        as ``client=`` is left to its owner."""
        client = self._clients.pop_current()
        if client is not None:
            await client.close()  # type: ignore[attr-defined]

    def _malformed(self, problem: str) -> NoReturn:
        raise malformed(self.provider, self.base_url, problem)

    def _raise(self, exc: Exception) -> NoReturn:
        err = self._error(exc)
        if err is None:
            raise exc
        raise err from exc

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[Tool]
    ) -> AssistantMessage:
        """One request; the assistant message with its tool calls."""
        params = self.request_params(messages, tools)
        try:
            response = await self._create(self._clients.get())(**params)
        except Exception as exc:
            self._raise(exc)
        if isinstance(response, str):
            self._malformed(f"expected a JSON reply, got text {response[:200]!r}")
        try:
            return self._parse(response)
        except SHAPE_ERRORS as exc:
            self._malformed(f"unexpected reply shape ({type(exc).__name__}: {exc})")

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[Tool]
    ) -> AsyncIterator[str | AssistantMessage]:
        """Text deltas as they arrive, then the complete message."""
        params = self.request_params(messages, tools, stream=True)
        state = self._stream_state()
        try:
            response: Any = await self._create(self._clients.get())(**params)
            if isinstance(response, str):
                self._malformed(f"expected an SSE stream, got text {response[:200]!r}")
            try:
                async for event in response:
                    try:
                        piece = state.add(event)
                    except SHAPE_ERRORS as exc:
                        self._malformed(f"unexpected stream event ({type(exc).__name__}: {exc})")
                    if piece:
                        yield piece
            finally:
                await response.close()
        except Exception as exc:
            self._raise(exc)
        yield state.finish(self.provider, self.base_url)

"""``AnthropicChat``: the Messages API on the official ``anthropic`` SDK.

How interlock's messages are sent:

- system messages go to the ``system`` parameter (joined by a blank line);
- an assistant turn becomes ``text`` and ``tool_use`` blocks, keeping the model's ids;
- tool results become ``tool_result`` blocks, ``is_error: true`` when the result's status is
  ``"error"`` (rejected, cancelled, expired, failed or invalid calls). All results of one
  assistant turn go into **one** user message, in the model's call order, as the API requires;
  a user message that follows them joins the same turn after the results.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import ConfigurationError, MissingDependency, ModelError
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from ..tools import Tool
from ._common import (
    ClientPerLoop,
    check_request_options,
    incomplete,
    malformed,
    parse_arguments,
    provider_error,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

PROVIDER = "anthropic"
DEFAULT_MAX_TOKENS = 4096
RESERVED = frozenset({"messages", "tools", "stream", "system"})


def to_anthropic_messages(
    messages: Sequence[Message],
) -> tuple[str | None, list[dict[str, Any]]]:
    """interlock messages → ``(system, messages)`` for the Messages API."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        if isinstance(m, SystemMessage):
            if m.content:
                system.append(m.content)
        elif isinstance(m, UserMessage):
            add("user", [{"type": "text", "text": m.content}] if m.content else [])
        elif isinstance(m, AssistantMessage):
            blocks: list[dict[str, Any]] = []
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            blocks.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.args)}
                for c in m.tool_calls
            )
            add("assistant", blocks)
        elif isinstance(m, ToolMessage):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id}
            if m.content:
                block["content"] = m.content
            if m.status == "error":
                block["is_error"] = True
            add("user", [block])
    return ("\n\n".join(system) if system else None), out


def to_anthropic_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """Tool definitions in the Messages API ``tools`` format."""
    out: list[dict[str, Any]] = []
    for t in tools:
        d = t.definition()
        item: dict[str, Any] = {"name": d["name"], "input_schema": d["parameters"]}
        if d["description"]:
            item["description"] = d["description"]
        out.append(item)
    return out


@dataclass
class _Block:
    type: str
    id: str = ""
    name: str = ""
    text: list[str] = field(default_factory=list)
    json: list[str] = field(default_factory=list)
    input: Any = None


@dataclass
class _StreamState:
    """Assembles the raw event stream: blocks by ``index``, text and JSON in fragments."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    started: bool = False
    stopped: bool = False

    def add(self, event: Any) -> str:
        """Take one event; return its text delta ("" when it has none)."""
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self.started = True
            for i, block in enumerate(getattr(event.message, "content", None) or []):
                self._start(i, block)
            return ""
        if kind == "content_block_start":
            return self._start(int(event.index), event.content_block)
        if kind == "content_block_delta":
            block = self.blocks.get(int(event.index))
            if block is None:
                raise ValueError(f"content_block_delta for unknown block {event.index}")
            delta = event.delta
            dtype = getattr(delta, "type", None)
            if dtype == "text_delta":
                block.text.append(delta.text)
                return str(delta.text)
            if dtype == "input_json_delta":
                block.json.append(delta.partial_json)
            return ""
        if kind == "message_stop":
            self.stopped = True
        return ""

    def _start(self, index: int, cb: Any) -> str:
        btype = str(getattr(cb, "type", ""))
        block = _Block(type=btype, id=str(getattr(cb, "id", "") or ""),
                       name=str(getattr(cb, "name", "") or ""), input=getattr(cb, "input", None))
        text = getattr(cb, "text", None) if btype == "text" else None
        if text:
            block.text.append(text)
        self.blocks[index] = block
        return text or ""

    def message(self) -> AssistantMessage:
        text: list[str] = []
        calls: list[ToolCall] = []
        for _, b in sorted(self.blocks.items()):
            if b.type == "text":
                text.extend(b.text)
            elif b.type == "tool_use":
                raw = "".join(b.json)
                args, error = parse_arguments(raw if raw.strip() else b.input)
                calls.append(ToolCall(id=b.id, name=b.name, args=args, args_error=error))
        return AssistantMessage(content="".join(text), tool_calls=calls)


class AnthropicChat:
    """A Claude model through the Messages API.

    ``AnthropicChat("claude-sonnet-4-6")`` reads ``ANTHROPIC_API_KEY`` and
    ``ANTHROPIC_BASE_URL`` from the environment (the SDK does this); ``api_key=`` /
    ``base_url=`` override them. ``max_tokens`` (required by the API) defaults to 4096.
    ``timeout`` and ``max_retries`` go to the SDK client; ``None`` keeps the SDK's defaults
    (retries with backoff on connection errors, 408, 409, 429 and 5xx). ``client=`` takes a
    ready ``AsyncAnthropic``, used as given (an SDK client is tied to the event loop it first
    sends from; without ``client=`` the adapter keeps one client per event loop). Any other
    keyword the SDK's ``messages.create`` takes (``tool_choice=``, ``stop_sequences=``,
    ``metadata=``, ``extra_body=`` ...) is sent with every request.

    Provider failures raise :class:`~interlock.ModelError` with the provider's message and
    HTTP status, after the SDK's own retries.
    """

    provider = PROVIDER

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: Any = None,
        max_retries: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        client: AsyncAnthropic | None = None,
        **request_options: Any,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise MissingDependency("AnthropicChat ('anthropic:...' models)", "anthropic",
                                    "anthropic") from exc
        if not model:
            raise ConfigurationError(
                "AnthropicChat needs a model name, e.g. AnthropicChat('claude-sonnet-4-6').")
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigurationError(
                f"AnthropicChat({model!r}): max_tokens must be a positive integer, got "
                f"{max_tokens!r}.")
        clash = sorted(RESERVED & set(request_options))
        if clash:
            raise ConfigurationError(
                f"AnthropicChat({model!r}): {', '.join(clash)} cannot be given as request "
                f"options; interlock sets them for every call (give the system prompt as "
                f"Agent(system_prompt=...))."
            )
        self._sdk = anthropic
        self.model = model
        self.max_tokens = max_tokens
        self.request_options: dict[str, Any] = request_options
        options: dict[str, Any] = {}
        if api_key is not None:
            options["api_key"] = api_key
        if base_url is not None:
            options["base_url"] = base_url
        if timeout is not None:
            options["timeout"] = timeout
        if max_retries is not None:
            options["max_retries"] = max_retries
        own = client is None
        try:
            if client is None:
                client = anthropic.AsyncAnthropic(**options)
            elif options:
                client = client.with_options(**options)
        except (anthropic.AnthropicError, ValueError) as exc:
            raise ConfigurationError(
                f"AnthropicChat({model!r}) cannot create the Anthropic client: {exc} Pass "
                f"api_key=... or set ANTHROPIC_API_KEY."
            ) from None
        check_request_options(f"AnthropicChat({model!r})", client.messages.create,
                              request_options)
        self.client: AsyncAnthropic = client
        """The SDK client as configured. When the adapter built it, requests from another
        event loop use a fresh client with the same settings (see ``ClientPerLoop``)."""
        factory = (lambda: anthropic.AsyncAnthropic(**options)) if own else None
        self._clients: ClientPerLoop[AsyncAnthropic] = ClientPerLoop(client, factory)

    @property
    def base_url(self) -> str:
        return str(self.client.base_url)

    @property
    def max_retries(self) -> int:
        return int(self.client.max_retries)

    @property
    def timeout(self) -> Any:
        return self.client.timeout

    def __repr__(self) -> str:
        return f"AnthropicChat({self.model!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the connections this adapter opened from the running event loop (call it at
        shutdown of a long-lived application). A later request opens new ones. A client passed
        as ``client=`` is left to its owner."""
        client = self._clients.pop_current()
        if client is not None:
            await client.close()

    # ------------------------------------------------------------------ requests

    def request_params(
        self, messages: Sequence[Message], tools: Sequence[Tool], *, stream: bool = False
    ) -> dict[str, Any]:
        """The keyword arguments of ``client.messages.create`` for this conversation."""
        system, wire = to_anthropic_messages(messages)
        params: dict[str, Any] = {
            **self.request_options,
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": wire,
        }
        if system is not None:
            params["system"] = system
        if tools:
            params["tools"] = to_anthropic_tools(tools)
        if stream:
            params["stream"] = True
        return params

    def _error(self, exc: BaseException) -> ModelError | None:
        if isinstance(exc, TypeError) and "authentication method" in str(exc):
            # the SDK checks credentials only when it sends the first request
            return ModelError(
                "no Anthropic credentials were found. Pass api_key=... to AnthropicChat or set "
                "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN).", provider=PROVIDER)
        return provider_error(
            exc, provider=PROVIDER, sdk=self._sdk, base_error=self._sdk.AnthropicError,
            base_url=self.base_url, max_retries=self.max_retries, env_key="ANTHROPIC_API_KEY",
            env_url="ANTHROPIC_BASE_URL",
        )

    def _malformed(self, problem: str) -> NoReturn:
        raise malformed(PROVIDER, self.base_url, problem)

    def _from_message(self, response: Any) -> AssistantMessage:
        if isinstance(response, str):
            self._malformed(f"expected a JSON message, got text {response[:200]!r}")
        try:
            blocks = response.content
            if not isinstance(blocks, list):
                self._malformed(f"'content' is {type(blocks).__name__}, not a list of blocks")
            text: list[str] = []
            calls: list[ToolCall] = []
            for b in blocks:
                btype = getattr(b, "type", None)
                if btype == "text":
                    text.append(str(b.text))
                elif btype == "tool_use":
                    args, error = parse_arguments(getattr(b, "input", None))
                    calls.append(ToolCall(id=str(b.id), name=str(b.name), args=args,
                                          args_error=error))
        except (AttributeError, TypeError, KeyError) as exc:
            self._malformed(f"unexpected message shape ({type(exc).__name__}: {exc})")
        return AssistantMessage(content="".join(text), tool_calls=calls)

    # ------------------------------------------------------------------ Model protocol

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[Tool]
    ) -> AssistantMessage:
        """One Messages API call; the assistant message with its tool calls."""
        params = self.request_params(messages, tools)
        try:
            response = await self._clients.get().messages.create(**params)
        except Exception as exc:
            err = self._error(exc)
            if err is None:
                raise
            raise err from exc
        return self._from_message(response)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[Tool]
    ) -> AsyncIterator[str | AssistantMessage]:
        """Text deltas as they arrive, then the complete message, assembled from the raw
        events (``content_block_start`` / ``content_block_delta`` with ``text_delta`` and
        ``input_json_delta`` / ``message_stop``)."""
        params = self.request_params(messages, tools, stream=True)
        state = _StreamState()
        try:
            response: Any = await self._clients.get().messages.create(**params)
            if isinstance(response, str):
                self._malformed(f"expected an SSE stream, got text {response[:200]!r}")
            try:
                async for event in response:
                    try:
                        piece = state.add(event)
                    except (AttributeError, TypeError, ValueError, KeyError) as exc:
                        self._malformed(f"unexpected stream event ({type(exc).__name__}: {exc})")
                    if piece:
                        yield piece
            finally:
                await response.close()
        except Exception as exc:
            err = self._error(exc)
            if err is None:
                raise
            raise err from exc
        if not state.stopped:
            raise incomplete(PROVIDER, self.base_url, "the stream ended before message_stop; "
                             "the connection was probably cut")
        yield state.message()

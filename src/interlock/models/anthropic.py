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

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
    incomplete,
    parse_arguments,
    provider_error,
)
from ._sdk import SdkChat, client_options

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

    def finish(self, provider: str, base_url: str) -> AssistantMessage:
        if not self.stopped:
            raise incomplete(provider, base_url, "the stream ended before message_stop; the "
                             "connection was probably cut")
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


class AnthropicChat(SdkChat["AsyncAnthropic"]):
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
        self._sdk = anthropic
        self.model = model
        self.max_tokens = max_tokens
        self.request_options = request_options
        self._setup(
            make=anthropic.AsyncAnthropic, client=client,
            options=client_options(api_key=api_key, base_url=base_url, timeout=timeout,
                                   max_retries=max_retries),
            client_errors=(anthropic.AnthropicError, ValueError), reserved=RESERVED,
            reserved_hint=" (give the system prompt as Agent(system_prompt=...))",
            hint="Pass api_key=... or set ANTHROPIC_API_KEY.",
        )

    def _create(self, client: AsyncAnthropic) -> Callable[..., Awaitable[Any]]:
        return client.messages.create

    def _stream_state(self) -> _StreamState:
        return _StreamState()

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

    def _parse(self, response: Any) -> AssistantMessage:
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

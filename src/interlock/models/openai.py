"""``OpenAIChat``: chat completions on the official ``openai`` SDK.

Works with OpenAI and every server that speaks the chat-completions API: Azure OpenAI (pass an
``AsyncAzureOpenAI`` as ``client=``), vLLM, Ollama, llama.cpp server, LM Studio, DashScope/Qwen,
DeepSeek (point ``base_url`` at the server's ``/v1``).

How interlock's messages are sent:

- an assistant turn keeps the model's tool-call ids, names and arguments (a JSON string with
  non-ASCII text kept as is);
- every tool result becomes a ``role: "tool"`` message with the call's ``tool_call_id``, in the
  model's call order. Chat completions has **no error flag** on tool results, so an error result
  (rejected, cancelled, expired, failed or invalid call) is recognisable by its text, which
  interlock always writes to say what happened (e.g. "The user rejected the tool call
  `send_email` (id call_2). The tool was not executed. ..."). The text is sent unchanged;
  edited calls carry the reviewer-change notice at the start of their result.
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
    dumps,
    incomplete,
    malformed,
    parse_arguments,
    provider_error,
)
from ._sdk import SdkChat, client_options

if TYPE_CHECKING:
    from openai import AsyncOpenAI

PROVIDER = "openai"
RESERVED = frozenset({"messages", "tools", "stream"})


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """interlock messages → chat-completions ``messages``."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.content})
        elif isinstance(m, UserMessage):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            item: dict[str, Any] = {"role": "assistant"}
            if m.tool_calls:
                item["content"] = m.content or None
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        # a call whose arguments could not be parsed never ran; it is sent as
                        # {} and its error result explains why
                        "function": {"name": c.name, "arguments": dumps(c.args)},
                    }
                    for c in m.tool_calls
                ]
            else:
                item["content"] = m.content
            out.append(item)
        elif isinstance(m, ToolMessage):
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
    return out


def to_openai_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """Tool definitions in the chat-completions ``tools`` format."""
    out: list[dict[str, Any]] = []
    for t in tools:
        d = t.definition()
        fn: dict[str, Any] = {"name": d["name"], "parameters": d["parameters"]}
        if d["description"]:
            fn["description"] = d["description"]
        out.append({"type": "function", "function": fn})
    return out


def _tool_call(raw: Any) -> ToolCall:
    call_id = getattr(raw, "id", None) or ""
    fn = getattr(raw, "function", None)
    if fn is None:
        kind = getattr(raw, "type", None)
        return ToolCall(id=call_id, name=str(getattr(getattr(raw, "custom", None), "name", "")),
                        args_error=f"unsupported tool call type {kind!r}; only function tools "
                        f"are supported")
    args, error = parse_arguments(getattr(fn, "arguments", None))
    return ToolCall(id=call_id, name=str(getattr(fn, "name", "") or ""), args=args,
                    args_error=error)


@dataclass
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamState:
    """Assembles streamed chunks: text in order, tool calls by their ``index``."""

    text: list[str] = field(default_factory=list)
    calls: list[_CallParts] = field(default_factory=list)
    by_index: dict[int, int] = field(default_factory=dict)
    chunks: int = 0
    finish_reason: str | None = None

    def add(self, chunk: Any) -> str:
        """Take one chunk; return its text delta ("" when it has none)."""
        self.chunks += 1
        choices = getattr(chunk, "choices", None)
        if not choices:  # e.g. the usage chunk at the end
            return ""
        finish = getattr(choices[0], "finish_reason", None)
        if finish:
            self.finish_reason = str(finish)
        delta = getattr(choices[0], "delta", None)
        if delta is None:
            return ""
        piece = (getattr(delta, "content", None) or "") + (getattr(delta, "refusal", None) or "")
        if piece:
            self.text.append(piece)
        for d in getattr(delta, "tool_calls", None) or []:
            self._add_call_delta(d)
        return piece

    def _add_call_delta(self, d: Any) -> None:
        index = getattr(d, "index", None)
        call_id = getattr(d, "id", None) or ""
        pos: int | None
        if isinstance(index, int):
            pos = self.by_index.get(index)
            # a new id at a known index starts a new call (servers that reuse index 0)
            if pos is not None and call_id and self.calls[pos].id and \
                    call_id != self.calls[pos].id:
                pos = None
        else:
            pos = None if (call_id or not self.calls) else len(self.calls) - 1
        if pos is None:
            self.calls.append(_CallParts())
            pos = len(self.calls) - 1
            if isinstance(index, int):
                self.by_index[index] = pos
        parts = self.calls[pos]
        if call_id and not parts.id:
            parts.id = call_id
        fn = getattr(d, "function", None)
        if fn is None:
            return
        name = getattr(fn, "name", None)
        if name and name != parts.name:
            parts.name = name if not parts.name else parts.name + name
        fragment = getattr(fn, "arguments", None)
        if fragment:
            parts.arguments.append(fragment)

    def finish(self, provider: str, base_url: str) -> AssistantMessage:
        if self.chunks == 0:
            raise malformed(provider, base_url, "the stream ended without any chunk")
        if self.finish_reason is None:
            raise incomplete(provider, base_url, "the stream ended before the model finished "
                             "(no chunk had a finish_reason); the connection was probably cut")
        calls = []
        for p in self.calls:
            args, error = parse_arguments("".join(p.arguments))
            calls.append(ToolCall(id=p.id, name=p.name, args=args, args_error=error))
        return AssistantMessage(content="".join(self.text), tool_calls=calls)


class OpenAIChat(SdkChat["AsyncOpenAI"]):
    """A chat-completions model (OpenAI or any OpenAI-compatible server).

    ``OpenAIChat("gpt-4.1-mini")`` reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` from the
    environment (the SDK does this); ``api_key=`` / ``base_url=`` override them. ``timeout``
    (seconds or an ``httpx.Timeout``) and ``max_retries`` go to the SDK client; ``None`` keeps
    the SDK's defaults (retries with backoff on connection errors, 408, 409, 429 and 5xx).
    ``client=`` takes a ready ``AsyncOpenAI`` / ``AsyncAzureOpenAI``, used as given (an SDK
    client is tied to the event loop it first sends from; without ``client=`` the adapter
    keeps one client per event loop). Any other keyword the SDK's ``chat.completions.create``
    takes (``temperature=``, ``parallel_tool_calls=``, ``tool_choice=``, ``extra_body=`` ...)
    is sent with every request.

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
        client: AsyncOpenAI | None = None,
        **request_options: Any,
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise MissingDependency("OpenAIChat ('openai:...' models)", "openai",
                                    "openai") from exc
        if not model:
            raise ConfigurationError("OpenAIChat needs a model name, e.g. OpenAIChat('gpt-4.1').")
        self._sdk = openai
        self.model = model
        self.request_options = request_options
        self._setup(
            make=openai.AsyncOpenAI, client=client,
            options=client_options(api_key=api_key, base_url=base_url, timeout=timeout,
                                   max_retries=max_retries),
            client_errors=(openai.OpenAIError,), reserved=RESERVED,
            hint="Pass api_key=... or set OPENAI_API_KEY. A local server that needs no key "
            "(Ollama, vLLM, llama.cpp, LM Studio) still needs a placeholder, e.g. "
            "api_key='local'.",
        )

    def _create(self, client: AsyncOpenAI) -> Callable[..., Awaitable[Any]]:
        return client.chat.completions.create

    def _stream_state(self) -> _StreamState:
        return _StreamState()

    def request_params(
        self, messages: Sequence[Message], tools: Sequence[Tool], *, stream: bool = False
    ) -> dict[str, Any]:
        """The keyword arguments of ``client.chat.completions.create`` for this conversation."""
        params: dict[str, Any] = {
            **self.request_options,
            "model": self.model,
            "messages": to_openai_messages(messages),
        }
        if tools:
            params["tools"] = to_openai_tools(tools)
        if stream:
            params["stream"] = True
        return params

    def _error(self, exc: BaseException) -> ModelError | None:
        return provider_error(
            exc, provider=PROVIDER, sdk=self._sdk, base_error=self._sdk.OpenAIError,
            base_url=self.base_url, max_retries=self.max_retries, env_key="OPENAI_API_KEY",
            env_url="OPENAI_BASE_URL",
        )

    def _parse(self, response: Any) -> AssistantMessage:
        try:
            choices = response.choices
            if not choices:
                return self._malformed("the completion has no choices")
            msg = choices[0].message
            content = getattr(msg, "content", None) or getattr(msg, "refusal", None) or ""
            raw_calls = getattr(msg, "tool_calls", None) or []
            calls = [_tool_call(c) for c in raw_calls]
        except (AttributeError, TypeError, IndexError, KeyError) as exc:
            return self._malformed(f"unexpected completion shape ({type(exc).__name__}: {exc})")
        if not isinstance(content, str):
            return self._malformed(f"message content is {type(content).__name__}, not text")
        return AssistantMessage(content=content, tool_calls=calls)

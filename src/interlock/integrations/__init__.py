"""Adapters for other ecosystems' tools and models (LangChain, MCP).

The core never imports a vendor SDK. This package recognises foreign objects by the name and
module of their classes (no import needed to ask "is this a LangChain tool?") and loads the
matching adapter module only when such an object is actually passed in. A missing extra is
reported as :class:`~interlock.MissingDependency` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigurationError
from ..tools import Tool, ToolSource, tool

if TYPE_CHECKING:
    from ..models.base import Model


def _has_base(obj: object, module_prefix: str, names: tuple[str, ...]) -> bool:
    return any(
        cls.__name__ in names and cls.__module__.startswith(module_prefix)
        for cls in type(obj).__mro__
    )


def is_langchain_tool(obj: object) -> bool:
    return _has_base(obj, "langchain_core.", ("BaseTool",))


def is_langchain_chat_model(obj: object) -> bool:
    return _has_base(obj, "langchain_core.", ("BaseChatModel",))


def is_langchain_runnable(obj: object) -> bool:
    return _has_base(obj, "langchain_core.", ("Runnable",))


def adapt_tool(obj: object) -> Tool | None:
    """An interlock tool for a foreign tool object, or None if ``obj`` is not one."""
    if is_langchain_tool(obj):
        from .langchain import LangChainTool

        return LangChainTool(obj)
    return None


def adapt_model(obj: object) -> Model | None:
    """An interlock model for a foreign chat model, or None if ``obj`` is not one."""
    if is_langchain_chat_model(obj) or is_langchain_runnable(obj):
        from .langchain import LangChainChatModel

        return LangChainChatModel(obj)
    return None


def expand_tools(items: Sequence[object]) -> tuple[list[Tool], list[ToolSource]]:
    """The tools of ``Agent(tools=...)``: interlock tools, plain functions (wrapped with
    :func:`tool`), tool sources (expanded) and foreign tools such as LangChain's ``BaseTool``
    (adapted)."""
    tools: list[Tool] = []
    sources: list[ToolSource] = []
    for item in items:
        if isinstance(item, Tool):
            tools.append(item)
        elif isinstance(item, ToolSource):
            sources.append(item)
            tools.extend(item.interlock_tools())
        elif (adapted := adapt_tool(item)) is not None:
            tools.append(adapted)
        elif callable(item):
            tools.append(tool(item))
        else:
            raise ConfigurationError(
                f"tools=[...] contains {item!r}, which is not a tool: pass @tool functions, "
                f"plain typed functions, LangChain tools or an MCP server."
            )
    return tools, sources

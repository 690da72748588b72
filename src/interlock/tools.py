"""``@tool``: typed Python functions (sync or async) as agent tools."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, get_args, get_type_hints, overload, runtime_checkable

from pydantic import BaseModel, ConfigDict, PydanticUserError, ValidationError, create_model
from pydantic_core import to_jsonable_python

from ._tool_threads import run_in_worker
from .errors import ConfigurationError


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """Injected into a tool that declares a parameter annotated ``ToolContext``.

    ``idempotency_key`` is stable for one tool call across retries and processes: pass it to
    external APIs (payments, e-mail) so that a retried call cannot act twice.
    """

    thread_id: str
    tool_call_id: str
    idempotency_key: str
    attempt: int = 1
    decision_metadata: Mapping[str, Any] | None = None
    """The ``metadata`` the reviewer gave with the decision that let this call run (an
    ``approve`` or ``edit``); ``None`` when none was given or no person decided (a rule, a
    remembered approval)."""


class ToolError(Exception):
    """Raise from a tool to return ``message`` to the model as an error result, verbatim.

    Any other exception also becomes an error result, prefixed with the tool's name and the
    exception type; ``ToolError`` is for tools that already word their failure for the model
    (e.g. an MCP server's ``isError`` result, a LangChain ``ToolException`` it handles).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ArgumentError(Exception):
    """Arguments do not match a tool's schema (turned into a message by the caller)."""

    def __init__(self, tool: str, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.tool = tool
        self.errors = errors


def _probe(param: str, annotation: Any, default: Any) -> type[BaseModel]:
    """A model of one parameter, to find the one whose type has no schema."""
    fields: dict[str, Any] = {param: (annotation, default)}
    return create_model("Probe", **fields)


def _type_error(tool: str, param: str, annotation: Any, cause: Exception) -> ConfigurationError:
    kind = getattr(annotation, "__name__", None) or repr(annotation)
    return ConfigurationError(
        f"Tool {tool!r}: parameter {param!r} has the type {kind}, which cannot be turned into "
        f"a JSON schema for the model. Use JSON-friendly types (str, int, float, bool, list, "
        f"dict, Literal, a pydantic model or TypedDict); pass objects such as connections or "
        f"clients to the tool another way (a closure, or a ToolContext parameter for the "
        f"call's ids). ({type(cause).__name__})"
    )


def _format_validation_error(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        out.append(f"{loc}: {err['msg']}")
    return out


class Tool:
    """A tool the model can call. Create with :func:`tool`."""

    read_only: bool = False
    """The tool declares that it changes nothing (``@tool(read_only=True)``)."""
    return_direct: bool = False
    """The run ends with this tool's result, the model is not called again, when every call
    of the model's turn is of such a tool (``@tool(return_direct=True)``, as LangChain's)."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        idempotent: bool = False,
        read_only: bool = False,
        return_direct: bool = False,
    ) -> None:
        if isinstance(func, str):
            raise ConfigurationError(
                f"@tool({func!r}): the name is a keyword argument, @tool(name={func!r}).")
        if not callable(func):
            raise ConfigurationError(f"@tool needs a function, got {func!r}.")
        self.func = func
        self.name = name or getattr(func, "__name__", "") or type(func).__name__
        if not self.name.replace("_", "").replace("-", "").isalnum():
            raise ConfigurationError(
                f"Tool name {self.name!r} must contain only letters, digits, '_' and '-'"
                + ("" if name else "; give the tool a name: tool(func, name='lookup_order') "
                                   "or @tool(name='lookup_order')") + "."
            )
        doc = inspect.getdoc(func) or ""
        self.description = description if description is not None else doc.strip()
        self.idempotent = idempotent
        self.read_only = read_only
        self.return_direct = return_direct
        self.is_async = inspect.iscoroutinefunction(func)
        self._context_param: str | None = None
        self.missing: list[str] = []
        """What the model will not see: no description, parameters without a type hint."""
        if not self.description:
            self.missing.append("no docstring, so the model sees no description of it (add a "
                                "docstring or @tool(description=...))")
        self.args_model: type[BaseModel] = self._build_model()
        try:
            self.args_schema: dict[str, Any] = self.args_model.model_json_schema()
        except PydanticUserError as exc:
            fields = {n: (f.annotation, ...) for n, f in self.args_model.model_fields.items()}
            raise self._at_fault(fields, exc, schema=True) from None
        self.args_schema.pop("title", None)

    def _at_fault(self, fields: Mapping[str, tuple[Any, Any]], exc: Exception, *,
                  schema: bool) -> ConfigurationError:
        """Name the parameter whose type pydantic cannot take (``schema``: cannot describe in
        a JSON schema), by building a model of each parameter alone: only once the model of
        all the arguments failed with ``exc``, so a tool that builds pays for none of them."""
        for pname, (ann, default) in fields.items():
            try:
                probe = _probe(pname, ann, default)
                if schema:
                    probe.model_json_schema()
            except (PydanticUserError, TypeError) as cause:
                return _type_error(self.name, pname, ann, cause)
        what = "a JSON schema for the model" if schema else "a model of the arguments"
        return ConfigurationError(
            f"Tool {self.name!r}: its arguments cannot be turned into {what} "
            f"({type(exc).__name__}: {exc}). Use JSON-friendly types for every parameter."
        )

    def _build_model(self) -> type[BaseModel]:
        sig = inspect.signature(self.func)
        try:
            hints = get_type_hints(self.func, include_extras=True)
        except Exception as exc:  # unresolved forward reference
            raise ConfigurationError(
                f"Cannot read the type hints of tool {self.name!r}: {exc}. Use importable types."
            ) from exc
        first = next(iter(sig.parameters), None)
        if first in ("self", "cls") and not inspect.ismethod(self.func):
            raise ConfigurationError(
                f"Tool {self.name!r}: its first parameter is {first!r}, so it is a method "
                f"decorated in its class, and the model would be asked for {first!r} as an "
                f"argument. Keep the method undecorated and make a tool of the bound method: "
                f"tools=[tool(obj.{getattr(self.func, '__name__', self.name)})], or decorate a "
                f"plain function."
            )
        fields: dict[str, Any] = {}
        untyped: list[str] = []
        for pname, param in sig.parameters.items():
            ann = hints.get(pname, Any)
            if ann is ToolContext or ToolContext in get_args(ann):
                self._context_param = pname
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ConfigurationError(
                    f"Tool {self.name!r} uses *{pname}; declare every argument by name so "
                    f"that a JSON schema can be derived."
                )
            if pname not in hints:
                untyped.append(pname)
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (ann, default)
        if untyped:
            self.missing.append(
                f"no type hint for {', '.join(repr(p) for p in untyped)}, so the model is told "
                f"any value goes and nothing is checked (annotate, e.g. {untyped[0]}: str)")
        model_name = "".join(p.capitalize() for p in self.name.replace("-", "_").split("_"))
        try:
            return create_model(
                # "NaN" / "Infinity" / "1e400" are no number a reviewer could have seen run
                f"{model_name}Args", __config__=ConfigDict(extra="forbid", allow_inf_nan=False),
                **fields
            )
        except (PydanticUserError, TypeError) as exc:
            raise self._at_fault(fields, exc, schema=False) from None

    def validate_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """Validate ``args`` against the schema; returns the coerced arguments."""
        try:
            model = self.args_model.model_validate(args)
        except ValidationError as exc:
            raise ArgumentError(self.name, _format_validation_error(exc)) from None
        return dict(model.__dict__)  # the fields' values (extra keys are forbidden)

    async def run(self, args: dict[str, Any], context: ToolContext) -> Any:
        """Validate ``args`` and call the function (sync functions run in a worker thread)."""
        kwargs = self.validate_args(args)
        if self._context_param:
            kwargs[self._context_param] = context
        if self.is_async:
            return await self.func(**kwargs)
        return await run_in_worker(functools.partial(self.func, **kwargs))

    def definition(self) -> dict[str, Any]:
        """Provider-neutral definition: name, description, JSON schema of the arguments."""
        return {"name": self.name, "description": self.description, "parameters": self.args_schema}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, idempotent={self.idempotent})"


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, idempotent: bool = False,
    read_only: bool = False, return_direct: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
    read_only: bool = False,
    return_direct: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function into a :class:`Tool`.

    The description comes from the docstring, the argument schema from the type hints.
    ``idempotent=True`` declares that running the call twice is harmless, which lets recovery
    retry a call whose outcome is unknown after a crash instead of asking a reviewer.
    ``read_only=True`` declares that the tool changes nothing; the web inbox then lets a
    reviewer "approve and remember" it without a confirmation step. ``return_direct=True``:
    when every call of a model turn is of such tools, the run ends with their results instead
    of calling the model again (LangChain's ``return_direct``; ``RunResult.output`` is the
    last result's text).
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(f, name=name, description=description, idempotent=idempotent,
                    read_only=read_only, return_direct=return_direct)

    if func is not None:
        return wrap(func)
    return wrap


@runtime_checkable
class ToolSource(Protocol):
    """Something that provides several tools and owns a resource, e.g. a connection to an MCP
    server. Pass it in ``Agent(tools=[...])``: the agent lists its tools when it is built and
    closes it in ``agent.close()`` / ``await agent.aclose()``."""

    def interlock_tools(self) -> Sequence[Tool]: ...

    async def aclose(self) -> None: ...


def result_to_text(value: Any) -> str:
    """How a tool's return value is shown to the model. A list of text content blocks
    (``[{"type": "text", "text": ...}, ...]``, as LangChain and MCP tools return them) is their
    text; anything else that is not a string is JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(
            isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
            for b in value):
        return "".join(b["text"] for b in value)
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(to_jsonable_python(value), ensure_ascii=False)


ToolHandler = Callable[..., Awaitable[Any]]

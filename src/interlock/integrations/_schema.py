"""Validating tool arguments against a JSON schema (for tools whose schema is not a Python
signature: MCP tools, LangChain tools built from a JSON schema)."""

from __future__ import annotations

from typing import Any

from ..errors import MissingDependency
from ..tools import ArgumentError


def check_json_args(tool: str, schema: dict[str, Any], args: dict[str, Any], extra: str) -> None:
    """Raise :class:`ArgumentError` listing every way ``args`` breaks ``schema``."""
    try:
        import jsonschema
    except ImportError as exc:  # pragma: no cover - a dependency of both extras
        raise MissingDependency(f"Validating the arguments of tool {tool!r}", extra,
                                "jsonschema") from exc
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema)
    problems = []
    for err in sorted(validator.iter_errors(args), key=lambda e: list(e.path)):
        loc = ".".join(str(p) for p in err.path) or "(arguments)"
        problems.append(f"{loc}: {err.message}")
    if problems:
        raise ArgumentError(tool, problems)

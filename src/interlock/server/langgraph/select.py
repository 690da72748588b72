"""What a client asks a response to carry, as the LangGraph server API answers it.

``select`` keeps only the named fields of each thread, assistant, run or state returned
(``threads.search``, ``assistants.search``, ``runs.list``, ``threads.get_state`` and
``threads.get_history``); for a state, ``values.<key>`` keeps one key of its values.
``extract`` adds to each thread of a search an ``extracted`` object of values read by path
(``{"last": "values.messages[-1]"}``: dots for keys, brackets for list positions, negative
from the end). A field that is not one of the object's is refused (422) before anything is
read, so a typo is not taken for an empty answer; a path that leads nowhere extracts ``null``,
as it does on LangGraph's server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ApiError

THREAD_FIELDS = ("thread_id", "created_at", "updated_at", "metadata", "config", "context",
                 "status", "values", "interrupts")
ASSISTANT_FIELDS = ("assistant_id", "graph_id", "name", "description", "config", "context",
                    "created_at", "updated_at", "metadata", "version")
RUN_FIELDS = ("run_id", "thread_id", "assistant_id", "created_at", "updated_at", "status",
              "metadata", "kwargs", "multitask_strategy", "cancel_reason")
STATE_FIELDS = ("values", "next", "tasks", "checkpoint", "metadata", "created_at",
                "parent_checkpoint", "interrupts")
VALUES_PREFIX = "values."

MAX_SELECT = 32
"""More fields than any object here has: a longer list is a client's mistake."""
MAX_EXTRACT = 10
"""Paths per search, LangGraph's own limit."""
MAX_PATH = 256
"""Characters in one extract path or alias."""

_SEGMENT = re.compile(r"(?P<key>[^.\[\]]+)(?P<index>(?:\[-?\d{1,9}\])*)")
_INDEX = re.compile(r"\[(-?\d+)\]")


def _refuse(error: str, message: str) -> ApiError:
    return ApiError(422, error, message + " Nothing was read.")


def check_select(select: Sequence[str] | None, allowed: Sequence[str], what: str, *,
                 values_keys: bool = False) -> tuple[str, ...] | None:
    """The fields to keep, checked; ``None`` (every field) when none were named.

    With ``values_keys``, ``values.<key>`` names one key of a state's values."""
    if not select:
        return None
    if len(select) > MAX_SELECT:
        raise _refuse("InvalidSelect", f"select names {len(select)} fields; a {what} has "
                                       f"{len(allowed)} (at most {MAX_SELECT} are accepted).")
    unknown = [f for f in select if not (
        f in allowed or (values_keys and f.startswith(VALUES_PREFIX)
                         and len(f) > len(VALUES_PREFIX)))]
    if unknown:
        extra = " or values.<key> for one key of the values" if values_keys else ""
        raise _refuse("InvalidSelect",
                      f"select names {', '.join(repr(f)[:80] for f in unknown[:5])}, not a "
                      f"field of a {what}; choose from {', '.join(allowed)}{extra}.")
    return tuple(dict.fromkeys(select))


def selected(obj: dict[str, Any], fields: tuple[str, ...] | None) -> dict[str, Any]:
    """``obj`` with only ``fields`` (those it has), in its own order; ``obj`` itself for
    ``None``.

    ``values.<key>`` fields keep those keys of ``obj["values"]``; with ``values`` itself also
    named, all of the values are kept."""
    if fields is None:
        return obj
    wanted = set(fields)
    out = {k: v for k, v in obj.items() if k in wanted}
    keys = [f[len(VALUES_PREFIX):] for f in fields if f.startswith(VALUES_PREFIX)]
    if keys and "values" not in wanted:
        values = obj.get("values")
        out["values"] = ({k: values[k] for k in keys if k in values}
                         if isinstance(values, Mapping) else values)
    return out


def check_extract(extract: Mapping[str, str] | None) -> dict[str, list[str | int]] | None:
    """``extract``'s paths parsed, by alias; ``None`` when none were given."""
    if not extract:
        return None
    if len(extract) > MAX_EXTRACT:
        raise _refuse("InvalidExtract",
                      f"extract names {len(extract)} paths; at most {MAX_EXTRACT} are accepted "
                      f"per search.")
    return {alias: _path(alias, path) for alias, path in extract.items()}


def _path(alias: str, path: object) -> list[str | int]:
    if not alias or len(alias) > MAX_PATH:
        raise _refuse("InvalidExtract", f"An extract alias must be 1 to {MAX_PATH} characters.")
    if not isinstance(path, str) or not 0 < len(path) <= MAX_PATH:
        raise _refuse("InvalidExtract", f"The extract path of {alias[:80]!r} must be a string "
                                        f"of 1 to {MAX_PATH} characters, such as "
                                        f"'values.messages[-1]'.")
    steps: list[str | int] = []
    for segment in path.split("."):
        m = _SEGMENT.fullmatch(segment)
        if m is None:
            raise _refuse("InvalidExtract",
                          f"The extract path {path[:80]!r} of {alias[:80]!r} is not keys "
                          f"joined by dots, each followed by list positions in brackets "
                          f"(such as 'values.messages[-1].content').")
        steps.append(m["key"])
        steps += [int(i) for i in _INDEX.findall(m["index"])]
    return steps


def extracted(obj: Any, paths: Mapping[str, list[str | int]]) -> dict[str, Any]:
    """The value at each path of ``obj`` (``None`` where the path leads nowhere)."""
    return {alias: _follow(obj, steps) for alias, steps in paths.items()}


def _follow(value: Any, steps: list[str | int]) -> Any:
    for step in steps:
        if isinstance(step, int):
            if not isinstance(value, list) or not -len(value) <= step < len(value):
                return None
            value = value[step]
        elif isinstance(value, Mapping) and step in value:
            value = value[step]
        else:
            return None
    return value

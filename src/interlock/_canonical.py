"""Canonical JSON: the text that audit rows sign and that digests are taken of.

The canonical form is, byte for byte, what the standard library writes with
``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``: rows signed
in that form must verify forever, so the form never changes. :func:`canonical_json` writes it
with ``orjson`` when the value holds only strings, integers, booleans, ``None``, lists and
dicts (there the two write the same bytes, which ``tests/test_canonical_json.py`` checks over
generated values), and with the standard library for everything else: a float (the two
format floats, ``NaN`` and infinities differently), an integer beyond 64 bits, a key that is
not a string, a subclass of a JSON type, a lone surrogate, nesting deeper than ``orjson``
allows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

_SORTED = orjson.OPT_SORT_KEYS

_STDLIB = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""The reference form (built once: ``json.dumps`` with options builds an encoder per call)."""

_STDLIB_STR = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                               default=str)

_SCALARS = (str, int, bool, type(None))


def _plain(value: Any) -> bool:
    """Whether ``value`` holds nothing but exact strings, integers, booleans, ``None``, lists
    and dicts (keys are left to ``orjson``, which refuses any that is not a string). Leaves are
    checked in the loop, not by a call each: most values of a row are strings."""
    kind = type(value)
    if kind is dict:
        items: Any = value.values()
    elif kind is list:
        items = value
    else:
        return kind in _SCALARS
    for item in items:
        kind = type(item)
        if kind in _SCALARS:
            continue
        if (kind is not dict and kind is not list) or not _plain(item):
            return False
    return True


def canonical_json(value: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """``value`` as canonical JSON text (see the module's docstring). ``default``: as
    ``json.dumps``'s, for values JSON has no type for; only ``None`` and ``str`` are offered,
    the two forms the audit uses."""
    try:
        fast = _plain(value)
    except RecursionError:
        fast = False
    if fast:
        try:
            return orjson.dumps(value, option=_SORTED).decode()
        except (TypeError, orjson.JSONEncodeError):
            pass  # a key that is not a string, an integer beyond 64 bits, a lone surrogate, depth
    if default is None:
        return _STDLIB.encode(value)
    if default is str:
        return _STDLIB_STR.encode(value)
    raise TypeError("canonical_json: default must be None or str")


def same_json(value: Any, other: Any) -> bool:
    """Whether two JSON values are the same value: equal, and of the same JSON types
    throughout. Python finds ``True == 1 == 1.0`` and ``[True] == [1]``; as arguments of a
    tool call they are different values, and an edit from one to the other changes the
    call."""
    if value is other:
        return True
    return bool(value == other) and \
        canonical_json(value, default=str) == canonical_json(other, default=str)

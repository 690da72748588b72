"""The public surface is what ``__all__`` says (as httpx's ``test_exported_members``): every
public name a package exposes is listed, every listed name is importable, and nothing else
leaks out of ``__init__`` (a helper imported there would otherwise become API by accident)."""

from __future__ import annotations
import __future__

import importlib
import types

import pytest

import interlock
from interlock import errors

LAZY = {"AnthropicChat", "OpenAIChat", "PostgresCheckpointer"}
"""Loaded on first use by ``interlock.__getattr__`` (optional extras), so not in ``__all__``."""


def _exposed(module: types.ModuleType) -> set[str]:
    return {name for name, value in vars(module).items()
            if not name.startswith("_")
            and not isinstance(value, types.ModuleType | __future__._Feature)}


@pytest.mark.parametrize("name", ["interlock", "interlock.storage", "interlock.audit"])
def test_all_lists_exactly_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    assert len(module.__all__) == len(set(module.__all__)), "a name listed twice"
    assert set(module.__all__) == _exposed(module)
    for member in module.__all__:
        namespace: dict[str, object] = {}
        exec(f"from {name} import {member}", namespace)
        assert namespace[member] is getattr(module, member)


def test_the_lazy_names_are_importable_and_nothing_else_is_made_up() -> None:
    for member in sorted(LAZY):
        namespace: dict[str, object] = {}
        exec(f"from interlock import {member}", namespace)
        assert isinstance(namespace[member], type), member
        assert member not in interlock.__all__
    with pytest.raises(AttributeError, match="no attribute 'Nonexistent'"):
        interlock.Nonexistent  # noqa: B018


def test_the_whole_error_tree_is_exported() -> None:
    """Every error of ``interlock.errors`` can be caught as ``interlock.<Name>``, and every
    one is a branch of the documented tree under ``InterlockError``."""
    tree = {name for name, value in vars(errors).items()
            if isinstance(value, type) and issubclass(value, interlock.InterlockError)}
    assert tree <= set(interlock.__all__), sorted(tree - set(interlock.__all__))
    doc = errors.__doc__ or ""
    for name in tree:
        assert f"── {name} " in doc or name == "InterlockError", name


def test_version_conflict_is_a_concurrency_error() -> None:
    from interlock.storage import VersionConflict
    from interlock.storage.base import VersionConflict as FromBase

    assert VersionConflict is FromBase is interlock.VersionConflict
    assert issubclass(VersionConflict, interlock.ConcurrencyError)
    err = VersionConflict("t1", 3)
    assert isinstance(err, interlock.InterlockError)
    assert "t1" in str(err) and "expected version 3" in str(err) and "Load the thread" in str(err)

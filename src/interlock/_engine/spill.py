"""Results a tool returned but the store could not take yet, kept until it does.

In memory for this process, and — where the store names a directory for it
(``SqliteCheckpointer.spill_dir``: next to the database file) — in a file there, so that
another process recovering the thread after this one died stores the real result instead of
declaring the outcome unknown. A spilled result names the thread, the call and the attempt it
belongs to, and is kept for the database it belongs to (the spill directory, or the store
object where there is none): it is used only for that attempt's ``running`` call in that
database — never for a thread of another database that has the same ids — and removed once
stored.
Writing the file is best effort (the disk may be the thing that is full): the memory copy
stays either way.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from ..messages import ToolMessage

log = logging.getLogger("interlock")

Key = tuple[str, str, int]
"""(thread id, tool call id, attempt)."""

class _Place:
    """The database a store writes to, as a dict key: its spill directory (SQLite: next to
    the file, whichever store object opened it), else the store object itself."""

    __slots__ = ("where",)

    def __init__(self, store: object) -> None:
        self.where: object = spill_dir(store) or store

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Place):
            return NotImplemented
        if isinstance(self.where, Path):
            return self.where == other.where
        return self.where is other.where

    def __hash__(self) -> int:
        return hash(self.where) if isinstance(self.where, Path) else id(self.where)


_KEPT: dict[tuple[_Place, Key], ToolMessage] = {}
Attempt = tuple[str, str, int, str]
"""(thread id, tool call id, attempt, the lease owner that wrote it ``running``)."""

_NOT_STARTED: set[tuple[_Place, Attempt]] = set()
"""Attempts whose ``running`` write failed in this process, so their tool was never called
(the write may have landed all the same: a connection cut after the server took it). The
owner is part of the key: when this process's write did not land, another process may store
the same attempt number and run the tool; that entry names its own owner."""


_MAY_HAVE_LANDED: set[tuple[_Place, Attempt]] = set()
"""The attempts of :data:`_NOT_STARTED` whose failed write may have been stored all the same
(the store could not tell): if it was, the call is ``running`` under this process's name, and
only this process knows its tool never started."""


def spill_dir(store: object) -> Path | None:
    """The directory a store keeps unstored results in (None: memory only)."""
    where = getattr(store, "spill_dir", None)
    return where if isinstance(where, Path) else None


def _file(where: Path, key: Key) -> Path:
    name = hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:32]
    return where / f"{name}.json"


def keep(store: object, key: Key, msg: ToolMessage) -> None:
    """Remember ``msg`` until :func:`drop` (in memory, and in the store's spill directory)."""
    _KEPT[_Place(store), key] = msg
    where = spill_dir(store)
    if where is None:
        return
    path = _file(where, key)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        where.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"key": list(key), "message": msg.model_dump(mode="json")}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        log.warning("thread %r: the result of call %r is kept in memory only; writing it to "
                    "%s failed: %s", key[0], key[1], where, exc)


def kept(store: object, key: Key) -> ToolMessage | None:
    """The result remembered for ``key``: this process's, or one spilled by another."""
    if (msg := _KEPT.get((_Place(store), key))) is not None:
        return msg
    where = spill_dir(store)
    if where is None:
        return None
    try:
        data = json.loads(_file(where, key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("key") != list(key):
        return None
    try:
        return ToolMessage.model_validate(data["message"])
    except (KeyError, ValueError):
        return None


def unsettled(store: object, thread_id: str) -> bool:
    """Whether this process knows something of ``thread_id`` that the store may not hold: a
    result it did not take yet, or an attempt whose tool never started although its
    ``running`` write may have landed. Both go with the process; a run of the thread in this
    process settles them (stores the result, puts the call back)."""
    place = _Place(store)
    return _holds(place, thread_id) or any(
        p == place and attempt[0] == thread_id for p, attempt in _NOT_STARTED)


def only_here(store: object, thread_id: str) -> bool:
    """Whether this process knows an outcome of ``thread_id`` that is lost with the process
    and then turns into "unknown": a tool's result the store did not take (on a store without
    a spill directory), or a call whose tool it never started although the ``running`` write
    may have landed (an attempt whose write the store refused is not one: it never landed)."""
    place = _Place(store)
    return _holds(place, thread_id) or any(
        p == place and attempt[0] == thread_id for p, attempt in _MAY_HAVE_LANDED)


def held_threads(store: object) -> list[str]:
    """The threads of ``store`` for which a result the store did not take is kept: by this
    process (in memory), or by any process in the store's spill directory (one that died
    after another process had asked about the call as "outcome unknown" leaves it there)."""
    place = _Place(store)
    found = {key[0] for p, key in _KEPT if p == place}
    where = spill_dir(store)
    if where is not None:
        found |= {key[0] for key in _spilled(where)}
    return sorted(found)


def _spilled(where: Path) -> list[Key]:
    """The keys of the results in the spill directory ``where`` (unreadable files skipped)."""
    keys: list[Key] = []
    try:
        paths = sorted(where.glob("*.json"))
    except OSError:
        return keys
    for path in paths:
        try:
            key = json.loads(path.read_text(encoding="utf-8")).get("key")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(key, list) and len(key) == 3 and isinstance(key[0], str) and \
                isinstance(key[1], str) and isinstance(key[2], int):
            keys.append((key[0], key[1], key[2]))
    return keys


def _holds(place: _Place, thread_id: str) -> bool:
    return any(p == place and key[0] == thread_id for p, key in _KEPT)


def drop_moot(store: object, thread_id: str, outdated: Callable[[str, int], bool]) -> None:
    """Forget the results kept for ``thread_id`` (here and in the spill directory) that
    ``outdated(tool_call_id, attempt)`` says can no longer be stored: the call has an outcome
    recorded since (a reviewer's answer to the "outcome unknown" question, a cancel), or was
    run again."""
    place = _Place(store)
    keys = {key for p, key in _KEPT if p == place and key[0] == thread_id}
    where = spill_dir(store)
    if where is not None:
        keys |= {key for key in _spilled(where) if key[0] == thread_id}
    for key in keys:
        if outdated(key[1], key[2]):
            drop(store, key)


def drop(store: object, key: Key) -> None:
    """The result for ``key`` is stored: forget it."""
    _KEPT.pop((_Place(store), key), None)
    where = spill_dir(store)
    if where is not None:
        with contextlib.suppress(OSError):
            _file(where, key).unlink()


def not_started(store: object, attempt: Attempt, *, may_have_landed: bool = True) -> None:
    """The ``running`` write of this attempt failed here: its tool was not called.
    ``may_have_landed``: the store cannot tell that nothing of the write was stored."""
    _NOT_STARTED.add((_Place(store), attempt))
    if may_have_landed:
        _MAY_HAVE_LANDED.add((_Place(store), attempt))


def starting(store: object, attempt: Attempt) -> None:
    """The ``running`` write of this attempt is stored and its tool is about to be called: an
    earlier failed write of the same key (one that did not land) says nothing of it."""
    _forget(store, attempt)


def put_back(store: object, attempt: Attempt) -> None:
    """The call of this attempt is stored back in its approved state: nothing is left to know."""
    _forget(store, attempt)


def _forget(store: object, attempt: Attempt) -> None:
    _NOT_STARTED.discard((_Place(store), attempt))
    _MAY_HAVE_LANDED.discard((_Place(store), attempt))


def never_started(store: object, attempt: Attempt) -> bool:
    """Whether this process knows that attempt's tool was never called (kept: a recovery
    whose own write fails asks again; a later attempt has another key)."""
    return (_Place(store), attempt) in _NOT_STARTED

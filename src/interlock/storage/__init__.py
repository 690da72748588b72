"""Checkpointers and the storage Protocol they share."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlparse

from ..errors import ConfigurationError
from .base import Checkpointer
from .memory import MemoryCheckpointer
from .sqlite import SqliteCheckpointer


def from_url(url: str) -> Checkpointer:
    """Open a checkpointer from a URL.

    * ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or a plain file path
    * ``postgresql://user@host:5432/db`` (``postgres://`` too); a ``search_path`` given as
      ``?options=-csearch_path%3Dmyschema`` selects the schema
    * ``memory://`` (not durable; one process only)
    """
    if "://" not in url:
        return SqliteCheckpointer(url)
    parsed = urlparse(url)
    scheme = parsed.scheme
    if scheme == "sqlite":
        rest = unquote(url[len("sqlite://"):].split("?", 1)[0])
        path = rest[1:] if rest.startswith("/") else rest
        if not path:
            raise ConfigurationError(f"{url!r}: give a file, e.g. sqlite:///interlock.db")
        return SqliteCheckpointer(path)
    if scheme in ("postgresql", "postgres"):
        from .postgres import PostgresCheckpointer

        schema = "public"
        options = parse_qs(parsed.query).get("options", [])
        for opt in options:
            for part in opt.split():
                if part.startswith("-csearch_path="):
                    schema = part.split("=", 1)[1].split(",")[0]
        base = url.split("?", 1)[0]
        return PostgresCheckpointer(base, schema=schema)
    if scheme == "memory":
        return MemoryCheckpointer()
    raise ConfigurationError(
        f"Unknown database URL {url!r}; use sqlite:///path.db, postgresql://user@host/db or "
        f"memory://."
    )


__all__ = ["Checkpointer", "MemoryCheckpointer", "SqliteCheckpointer", "from_url"]

"""Opening a checkpointer from a database URL (``--db``, ``INTERLOCK_DB``)."""

from __future__ import annotations

import os
from urllib.parse import unquote, urlparse

from ..errors import ConfigurationError
from .base import Checkpointer, ReadKeys
from .memory import MemoryCheckpointer
from .postgres_conn import is_conninfo, redact_url
from .sqlite import SqliteCheckpointer

LISTEN_ENV = "INTERLOCK_LISTEN_DB"
"""A direct URL for Postgres's ``LISTEN`` connection when the main one goes through a pooler
in transaction mode."""


def from_url(url: str, *, read_keys: ReadKeys | None = None) -> Checkpointer:
    """Open a checkpointer from a URL.

    * ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or a plain file path
    * ``postgresql://user@host:5432/db`` (``postgres://`` too), or libpq's keyword form
      (``host=db dbname=app user=app``), with any libpq parameter
      (``sslmode``, ``target_session_attrs``, ``application_name``, ``options``, several
      hosts) and interlock's own ``schema``, ``prepare_threshold``, ``max_size``,
      ``pool_timeout`` and ``migrate`` (a ``search_path`` in ``options=-csearch_path%3Dmyschema``
      also selects the schema); ``INTERLOCK_LISTEN_DB`` gives a separate URL for ``LISTEN``
    * ``memory://`` (not durable; one process only)

    ``read_keys`` (``interlock.authz.read_keys``) is handed to a SQLite or Postgres store: it
    needs it to open a database written before interlock indexed who may read each thread.
    """
    if is_conninfo(url):  # host=db dbname=app user=... (libpq's keyword form)
        from .postgres import PostgresCheckpointer

        return PostgresCheckpointer(url, listen_dsn=os.environ.get(LISTEN_ENV) or None,
                                    read_keys=read_keys)
    if "://" not in url:
        return SqliteCheckpointer(url, read_keys=read_keys)
    parsed = urlparse(url)
    scheme = parsed.scheme
    if scheme == "sqlite":
        rest = unquote(url[len("sqlite://"):].split("?", 1)[0])
        path = rest[1:] if rest.startswith("/") else rest
        if not path:
            raise ConfigurationError(f"{url!r}: give a file, e.g. sqlite:///interlock.db")
        return SqliteCheckpointer(path, read_keys=read_keys)
    if scheme in ("postgresql", "postgres"):
        from .postgres import PostgresCheckpointer

        # every libpq parameter stays in the URL; the checkpointer takes interlock's own out
        return PostgresCheckpointer(url, listen_dsn=os.environ.get(LISTEN_ENV) or None,
                                    read_keys=read_keys)
    if scheme == "memory":
        return MemoryCheckpointer()
    raise ConfigurationError(
        f"Unknown database URL {redact_url(url)!r}; use sqlite:///path.db, "
        f"postgresql://user@host/db or memory://."
    )

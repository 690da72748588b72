"""How :class:`~interlock.storage.postgres.PostgresCheckpointer` connects: the database URL
(libpq's parameters kept, interlock's own taken out), passwords left out of every message,
and the causes of connection-level failures named (a standby, a pooler's queue, a timeout)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from psycopg import Connection

OWN_PARAMS = ("schema", "prepare_threshold", "max_size", "pool_timeout", "migrate", "spill_dir")
"""Query parameters of a ``postgresql://`` URL that are interlock's, not libpq's: they are
taken out of the URL before it reaches libpq (which would refuse them)."""


@dataclass(frozen=True)
class DsnParts:
    """A DSN split into what libpq gets and interlock's own settings."""

    libpq: str
    schema: str | None = None
    prepare_threshold: int | None = 5
    prepare_given: bool = False
    max_size: int | None = None
    pool_timeout: float | None = None
    migrate: bool | None = None
    spill_dir: str | None = None


def split_dsn(dsn: str) -> DsnParts:
    """Take interlock's own parameters (:data:`OWN_PARAMS`) out of a ``postgresql://`` URL;
    every other parameter (``sslmode``, ``sslrootcert``, ``target_session_attrs``,
    ``application_name``, ``options``, several hosts, ...) stays for libpq. A ``search_path``
    in ``options=-csearch_path=NAME`` still selects the schema when ``schema`` is not given.
    A ``key=value`` connection string is passed on as it is."""
    if "://" not in dsn:
        return DsnParts(libpq=dsn)
    parts = urlsplit(dsn)
    own: dict[str, str] = {}
    kept: list[tuple[str, str]] = []
    raw_kept: list[str] = []  # as written: libpq decodes %XX itself (and "+" is a plus)
    for raw in filter(None, parts.query.split("&")):
        key, _, value = raw.partition("=")
        if unquote(key) in OWN_PARAMS:
            own[unquote(key)] = unquote(value)
        else:
            kept.append((unquote(key), unquote(value)))
            raw_kept.append(raw)
    schema = own.get("schema") or _search_path_schema(kept)
    given = "prepare_threshold" in own
    threshold = parse_prepare_threshold(own["prepare_threshold"]) if given else 5
    libpq = urlunsplit((parts.scheme, parts.netloc, parts.path, "&".join(raw_kept),
                        parts.fragment))
    migrate = own.get("migrate", "").strip().lower()
    if migrate not in ("", "true", "false", "on", "off", "yes", "no", "1", "0"):
        raise ConfigurationError(
            f"migrate={own['migrate']!r} in the database URL: give true (create and migrate "
            f"the tables at first use, the default) or false (leave that to `interlock "
            f"migrate`).")
    return DsnParts(
        libpq=libpq, schema=schema, prepare_threshold=threshold, prepare_given=given,
        max_size=_number(own, "max_size", int), pool_timeout=_number(own, "pool_timeout", float),
        migrate=None if not migrate else migrate in ("true", "on", "yes", "1"),
        spill_dir=own.get("spill_dir"),
    )


def parse_prepare_threshold(value: str) -> int | None:
    """``none`` / ``off`` / ``false``: no prepared statements (what a pooler in transaction
    mode needs); a number: prepare a statement after that many executions (psycopg's 5)."""
    if value.strip().lower() in ("none", "off", "false", "no", "0"):
        return None
    try:
        n = int(value)
    except ValueError:
        raise ConfigurationError(
            f"prepare_threshold={value!r} in the database URL: give none (no prepared "
            f"statements, for PgBouncer in transaction mode) or a whole number."
        ) from None
    if n < 0:
        raise ConfigurationError(f"prepare_threshold={n}: give none or a number >= 0.")
    return n


def _number(own: dict[str, str], key: str, kind: type[int] | type[float]) -> Any:
    if key not in own:
        return None
    try:
        value = kind(own[key])
    except ValueError:
        raise ConfigurationError(
            f"{key}={own[key]!r} in the database URL: give a number."
        ) from None
    if value <= 0:
        raise ConfigurationError(f"{key}={own[key]} in the database URL: give a number > 0.")
    return value


def _search_path_schema(params: list[tuple[str, str]]) -> str | None:
    for key, value in params:
        if key != "options":
            continue
        words = value.replace("-c ", "-c").split()
        for word in words:
            if word.startswith("-csearch_path="):
                first = word.split("=", 1)[1].split(",")[0].strip().strip('"')
                if first:
                    return first
    return None


def url_connect_timeout(dsn: str) -> float | None:
    """The ``connect_timeout`` a DSN gives (None: none, or not a number)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        value = conninfo_to_dict(dsn).get("connect_timeout")
        return float(value) if value is not None and float(value) > 0 else None
    except Exception:
        return None


# the keywords of a libpq connection string (``host=db user=app password=...``): a --db or
# INTERLOCK_DB value that starts with one is Postgres, not a SQLite file's name
_LIBPQ_KEYWORDS = frozenset({
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service",
    "sslmode", "sslrootcert", "sslcert", "sslkey", "connect_timeout", "application_name",
    "options", "target_session_attrs", "load_balance_hosts", "channel_binding", "gssencmode",
    "krbsrvname", "keepalives", "keepalives_idle", "requiressl", "client_encoding"})
_KEYWORD = re.compile(r"\s*([a-z_]+)\s*=")


def is_conninfo(dsn: str) -> bool:
    """Whether ``dsn`` is a libpq ``key=value`` connection string (``host=db dbname=app``)."""
    m = _KEYWORD.match(dsn)
    return "://" not in dsn and m is not None and m.group(1) in _LIBPQ_KEYWORDS


def _userinfo(dsn: str) -> tuple[str, str] | None:
    """The ``user`` and ``password`` of a URL as written, found by the last ``@`` before the
    query: a password with an unencoded ``/`` or ``@`` does not move it (libpq's own parse
    of such a URL takes part of the password for the host)."""
    _, sep, rest = dsn.partition("://")
    if not sep:
        return None
    head = rest.split("?", 1)[0]
    at = head.rfind("@")
    if at < 0:
        return None
    user, _, password = head[:at].partition(":")
    return user, password


def secrets_of(dsn: str) -> list[str]:
    """The password of a DSN, and its pieces as a misparse could show them (split at ``@``,
    ``/`` and ``:``), longest first: what :func:`scrub` removes from a server's message."""
    found: list[str] = []
    userinfo = _userinfo(dsn)
    if userinfo is not None and userinfo[1]:
        found += [userinfo[1], unquote(userinfo[1])]
    elif is_conninfo(dsn):
        try:
            from psycopg.conninfo import conninfo_to_dict

            password = conninfo_to_dict(dsn).get("password")
        except Exception:
            password = None
        if password:
            found.append(str(password))
    pieces = {p for secret in found for p in re.split(r"[@/:?#]", secret) if len(p) >= 3}
    return sorted(set(found) | pieces, key=len, reverse=True)


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` (a server's or libpq's message) with every piece of the password replaced."""
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    return text


def redact(dsn: str) -> str:
    """``user@host:port/dbname`` of a DSN, without the password (for messages and repr);
    several hosts are listed as libpq has them (``a,b:5432,5433``)."""
    userinfo = _userinfo(dsn)
    if userinfo is not None:  # the password out before parsing, wherever its "@" are
        scheme, _, rest = dsn.partition("://")
        head, q, query = rest.partition("?")
        head = (f"{userinfo[0]}@" if userinfo[0] else "") + head[head.rfind("@") + 1:]
        dsn = f"{scheme}://{head}{q}{query}"
    try:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(split_dsn(dsn).libpq)
    except Exception:
        return "<unparsable DSN>"
    user = f"{info['user']}@" if info.get("user") else ""
    port = f":{info['port']}" if info.get("port") else ""
    return f"{user}{info.get('host') or 'localhost'}{port}/{info.get('dbname') or ''}"


def redact_url(url: str) -> str:
    """A database URL for a message: a ``postgresql://`` URL as :func:`redact` gives it, any
    other URL with the password of its ``user:password@`` part replaced by ``***``."""
    if url.startswith(("postgresql://", "postgres://")) or is_conninfo(url):
        return "postgresql://" + redact(url)
    if "://" not in url:
        return url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def read_only_reason(conn: Connection[Any]) -> str | None:
    """Why the server behind ``conn`` cannot take writes (None: it can): a standby in
    recovery, or a server (or role, or database) whose transactions are read-only."""
    row = conn.execute("SELECT pg_is_in_recovery(), "
                       "current_setting('default_transaction_read_only')").fetchone()
    if row is None:
        return None
    if row[0]:
        return ("it is a standby in recovery (pg_is_in_recovery() is true), which accepts "
                "no writes")
    if str(row[1]).lower() == "on":
        return ("its transactions are read-only (default_transaction_read_only is on for "
                "this server, database or role)")
    return None


STANDBY_HINT = (
    "interlock needs the primary. For a failover pair list both hosts and let libpq pick "
    "the one that takes writes: postgresql://user@primary,standby/db?"
    "target_session_attrs=read-write"
)


def cause(exc: BaseException) -> str | None:
    """The cause a plain reader needs for a few failures whose text does not say it: a
    pooler's queue wait, a statement timeout, a read-only server, a missing privilege."""
    from psycopg import errors as e

    text = str(exc)
    if "query_wait_timeout" in text or "no more connections allowed" in text:
        return ("the connection pooler (PgBouncer) had no server connection for this client "
                "within its query_wait_timeout: its pool is smaller than what the interlock "
                "processes hold. Keep processes x (max_size + 2) at or below the pooler's "
                "default_pool_size in session mode (docs/deploying.md), or lower max_size")
    if "unsupported startup parameter" in text:
        return ("a connection pooler (PgBouncer) refuses a libpq parameter of the URL, "
                "usually options=...: select the schema with schema=NAME instead, and set "
                "session settings such as statement_timeout on the role (ALTER ROLE ... SET)")
    if isinstance(exc, e.QueryCanceled):
        return ("the statement ran longer than the session's statement_timeout (set on the "
                "role, the database or in the URL's options); raise it or wait for the "
                "other process")
    if isinstance(exc, e.ReadOnlySqlTransaction):
        return f"the server takes no writes. {STANDBY_HINT}"
    if isinstance(exc, e.InsufficientPrivilege):
        return ("the role lacks a privilege: creating the tables needs CREATE on the schema "
                "(and on the database for a missing schema), so run `interlock migrate` as "
                "the schema's owner; running needs only the data privileges listed in "
                "docs/deploying.md")
    # a prepared statement made on one server connection and sent on another (a pooler in
    # transaction mode hands each transaction any connection): "bind message supplies 2
    # parameters, but prepared statement "_pg3_3" requires 0", SQLSTATE 08P01
    if isinstance(exc, (e.DuplicatePreparedStatement, e.InvalidSqlStatementName)) or (
            isinstance(exc, e.ProtocolViolation) and "prepared statement" in text):
        return ("prepared statements do not work through this pooler (PgBouncer in "
                "transaction mode): add prepare_threshold=none to the database URL")
    return None

"""Reviewer authentication: bearer tokens mapped to identities and roles.

Tokens come from a TOML or JSON file, or from the ``INTERLOCK_TOKENS`` environment variable
(JSON). Two shapes are accepted::

    # list form (TOML shown; JSON is the same structure)
    [[reviewers]]
    id = "alice"
    roles = ["dba", "ops"]
    token = "a-long-random-secret"          # or token_sha256 = "<hex digest of the token>"
    expires = 2027-01-31T00:00:00Z          # optional: refused from then on

    # mapping form (JSON): token -> identity
    {"a-long-random-secret": {"id": "alice", "roles": ["dba"]}}

Only SHA-256 digests of the tokens are kept in memory and a presented token is compared with
every configured digest in constant time. A token file is read again when it changes (checked at
most once a second), so tokens can be added, rotated and removed without a restart. Repeated
failed attempts from one client are throttled (:class:`FailureThrottle`). Without any configured
token the server runs in *local mode*: every request acts as the application itself (reviewer
``local``, every right), and the server only accepts loopback binds and loopback clients.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import os
import threading
import time
import tomllib
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from ..authz import Reviewer, check_distinct_ids, is_reserved, reviewer_key
from ..errors import ConfigurationError, NotAuthorized

log = logging.getLogger("interlock.server")

ENV_TOKENS = "INTERLOCK_TOKENS"
"""JSON with the token configuration (either shape)."""
ENV_TOKENS_FILE = "INTERLOCK_TOKENS_FILE"
"""Path of a TOML or JSON token file."""
LOCAL_ID = "local"
MIN_TOKEN_LENGTH = 16
RELOAD_CHECK_SECONDS = 1.0


@dataclass(frozen=True)
class Identity:
    """Who is calling. ``authenticated`` is False in local mode (no tokens configured)."""

    id: str
    roles: frozenset[str]
    authenticated: bool = True
    expires_at: datetime | None = None

    def reviewer(self) -> Reviewer | None:
        """The :class:`Reviewer` passed to the core; ``None`` in local mode (the application
        itself: every right)."""
        return Reviewer(self.id, self.roles) if self.authenticated else None


LOCAL_IDENTITY = Identity(LOCAL_ID, frozenset(), authenticated=False)


@dataclass(frozen=True)
class _Entry:
    digest: bytes
    identity: Identity


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def _identity(raw: Any, where: str) -> Identity:
    if isinstance(raw, str):
        raw = {"id": raw}
    if not isinstance(raw, Mapping):
        raise ConfigurationError(f"{where}: expected {{'id': ..., 'roles': [...]}}, got {raw!r}.")
    rid = raw.get("id")
    if not isinstance(rid, str) or not rid.strip():
        raise ConfigurationError(f"{where}: every reviewer needs a non-empty string 'id'.")
    if is_reserved(rid):
        raise ConfigurationError(
            f"{where}: reviewer id {rid!r} is reserved (ids starting with 'system', 'rule:', "
            f"'middleware:' or 'policy' name the system in the audit log); choose another id."
        )
    roles = raw.get("roles", [])
    if isinstance(roles, str) or not isinstance(roles, Sequence) or not all(
        isinstance(r, str) for r in roles
    ):
        raise ConfigurationError(f"{where}: 'roles' of {rid!r} must be a list of strings.")
    return Identity(rid.strip(), frozenset(roles), expires_at=_expiry(raw.get("expires"), where))


def _expiry(raw: Any, where: str) -> datetime | None:
    """``expires``: a TOML date-time / date or an ISO 8601 string; a time without a zone
    is UTC."""
    if raw is None:
        return None
    value: Any = raw
    if isinstance(raw, str):
        try:
            value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            value = None
    elif isinstance(raw, date) and not isinstance(raw, datetime):
        value = datetime(raw.year, raw.month, raw.day)
    if not isinstance(value, datetime):
        raise ConfigurationError(
            f"{where}: 'expires' must be a date-time like 2027-01-31T00:00:00Z, got {raw!r}."
        )
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class TokenAuth:
    """The configured tokens. Build it with :meth:`from_config`, :meth:`from_file` or
    :meth:`from_env`."""

    def __init__(self, entries: Iterable[tuple[bytes, Identity]]) -> None:
        self._entries = self._checked(entries)
        self._path: Path | None = None
        self._stamp: tuple[int, int, int] | None = None
        self._checked_at = 0.0
        self._lock = threading.Lock()

    @staticmethod
    def _checked(entries: Iterable[tuple[bytes, Identity]]) -> list[_Entry]:
        out = [_Entry(d, i) for d, i in entries]
        if not out:
            raise ConfigurationError(
                "The token configuration has no tokens. Add at least one reviewer, or pass no "
                "tokens at all to run in local (loopback-only) mode."
            )
        if len({e.digest for e in out}) != len(out):
            raise ConfigurationError("The same token is configured twice; tokens must differ.")
        check_distinct_ids((e.identity.id for e in out), "The token configuration")
        return out

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        ids = sorted({e.identity.id for e in self._entries})
        return f"TokenAuth(reviewers={ids})"

    @property
    def identities(self) -> list[Identity]:
        return [e.identity for e in self._entries]

    def holder(self, reviewer_id: str, now: datetime) -> Identity | None:
        """The reviewer ``reviewer_id`` as the current token file has them (read again if it
        changed): their identity with the roles of their unexpired tokens, or ``None`` when no
        token of theirs is configured. Raises :class:`TokenRevoked` when every one of their
        tokens has expired. Used by the channels that decide without a bearer token (Slack,
        e-mail links), so removing or expiring a token takes effect there too."""
        self.refresh()
        key = reviewer_key(reviewer_id)
        mine = [e.identity for e in self._entries if reviewer_key(e.identity.id) == key]
        if not mine:
            return None
        live = [i for i in mine if i.expires_at is None or i.expires_at > now]
        if not live:
            raise TokenRevoked(
                f"The token of reviewer {mine[0].id!r} expired at "
                f"{max(i.expires_at for i in mine if i.expires_at):%Y-%m-%d %H:%M} UTC, so they "
                f"cannot decide on any surface; ask an administrator for a new token.")
        return Identity(live[0].id, frozenset().union(*(i.roles for i in live)),
                        expires_at=None)

    def authenticate(self, token: str) -> Identity | None:
        """The identity of ``token`` (expired or not: see :meth:`Identity.expires_at`), or
        None. Compares against every digest in constant time."""
        self.refresh()
        presented = _digest(token)
        found: Identity | None = None
        for entry in self._entries:
            if hmac.compare_digest(entry.digest, presented):
                found = entry.identity
        return found

    # -- reloading -------------------------------------------------------------------------

    @staticmethod
    def _stat(path: Path) -> tuple[int, int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def refresh(self, *, force: bool = False) -> bool:
        """Read the token file again if it changed since it was read (checked at most once
        every :data:`RELOAD_CHECK_SECONDS`). A file that became invalid is reported in the log
        and the tokens read before stay in force. Returns True if new tokens were loaded."""
        if self._path is None:
            return False
        now = time.monotonic()
        if not force and now - self._checked_at < RELOAD_CHECK_SECONDS:
            return False
        with self._lock:
            self._checked_at = now
            stamp = self._stat(self._path)
            if stamp is None or stamp == self._stamp:
                return False
            try:
                fresh = TokenAuth.from_file(self._path)
            except ConfigurationError as exc:
                log.error("The token file changed but cannot be used; the previous tokens stay "
                          "in force: %s", exc)
                self._stamp = stamp
                return False
            self._entries = fresh._entries
            self._stamp = stamp
            log.info("Token file %s re-read: %d token(s)", self._path, len(self._entries))
            return True

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def from_config(cls, data: Any, *, source: str = "token configuration") -> TokenAuth:
        """From parsed JSON / TOML in either shape (see the module docstring)."""
        entries: list[tuple[bytes, Identity]] = []
        if isinstance(data, Mapping) and "reviewers" in data:
            items = data["reviewers"]
            if not isinstance(items, Sequence) or isinstance(items, str):
                raise ConfigurationError(f"{source}: 'reviewers' must be a list.")
            for n, item in enumerate(items, 1):
                where = f"{source}, reviewer #{n}"
                if not isinstance(item, Mapping):
                    raise ConfigurationError(f"{where}: expected a table/object.")
                identity = _identity(item, where)
                entries.append((cls._item_digest(item, where), identity))
        elif isinstance(data, Mapping):
            for n, (token, raw) in enumerate(data.items(), 1):
                # never the raw value: in a reversed entry (name = token) it is the secret
                rid = raw.get("id") if isinstance(raw, Mapping) else None
                where = f"{source}, entry #{n}" + (
                    f" (reviewer {rid!r})" if isinstance(rid, str) else "")
                if isinstance(token, str) and len(token) < MIN_TOKEN_LENGTH and \
                        isinstance(raw, str) and len(raw) >= MIN_TOKEN_LENGTH:
                    raise ConfigurationError(
                        f"{where}, {token!r} = ...: this looks like a name followed by its "
                        f"token, the reverse of the short form, which maps a token to a "
                        f"reviewer (\"<token>\" = \"alice\"). Write a table per reviewer "
                        f"instead: [[reviewers]] with id = {token!r}, roles = [...] and "
                        f"token = \"...\" (docs/server.md, Authentication and roles).")
                entries.append((cls._token_digest(token, where), _identity(raw, where)))
        else:
            raise ConfigurationError(
                f"{source}: expected {{'reviewers': [...]}} or {{token: {{'id': ..., "
                f"'roles': [...]}}}}, got {type(data).__name__}."
            )
        return cls(entries)

    @staticmethod
    def _token_digest(token: Any, where: str) -> bytes:
        if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH:
            raise ConfigurationError(
                f"{where}: tokens must be strings of at least {MIN_TOKEN_LENGTH} characters "
                f"(generate one with: python -c 'import secrets; print(secrets.token_urlsafe())')."
            )
        return _digest(token)

    @classmethod
    def _item_digest(cls, item: Mapping[str, Any], where: str) -> bytes:
        token, hexdigest = item.get("token"), item.get("token_sha256")
        if (token is None) == (hexdigest is None):
            raise ConfigurationError(f"{where}: give exactly one of 'token' or 'token_sha256'.")
        if token is not None:
            return cls._token_digest(token, where)
        try:
            raw = bytes.fromhex(str(hexdigest))
        except ValueError:
            raw = b""
        if len(raw) != 32:
            raise ConfigurationError(f"{where}: 'token_sha256' must be 64 hex digits.")
        return raw

    @classmethod
    def from_file(cls, path: str | Path) -> TokenAuth:
        """From a ``.toml`` or ``.json`` file, which is read again when it changes."""
        p = Path(path)
        stamp = cls._stat(p)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"Cannot read the token file {str(p)!r}: {exc}.") from None
        try:
            data = tomllib.loads(text) if p.suffix.lower() == ".toml" else json.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise ConfigurationError(f"The token file {str(p)!r} is not valid: {exc}.") from None
        auth = cls.from_config(data, source=str(p))
        auth._path, auth._stamp, auth._checked_at = p, stamp, time.monotonic()
        return auth

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TokenAuth | None:
        """From ``INTERLOCK_TOKENS`` (JSON) or ``INTERLOCK_TOKENS_FILE``; None if neither is set."""
        env = os.environ if environ is None else environ
        raw = env.get(ENV_TOKENS, "").strip()
        path = env.get(ENV_TOKENS_FILE, "").strip()
        if raw and path:
            raise ConfigurationError(f"Set only one of {ENV_TOKENS} and {ENV_TOKENS_FILE}.")
        if path:
            return cls.from_file(path)
        if not raw:
            return None
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ConfigurationError(f"{ENV_TOKENS} is not valid JSON: {exc}.") from None
        return cls.from_config(data, source=ENV_TOKENS)


TokenConfig = TokenAuth | Mapping[str, Any] | str | Path


class TokenRevoked(NotAuthorized):
    """A reviewer's tokens all expired: they may not decide through any channel."""


def load_tokens(tokens: TokenConfig | None, *, use_env: bool = True) -> TokenAuth | None:
    """Normalise the ``tokens`` argument of :func:`create_app` / :func:`serve`."""
    if tokens is None:
        return TokenAuth.from_env() if use_env else None
    if isinstance(tokens, TokenAuth):
        return tokens
    if isinstance(tokens, str | Path):
        return TokenAuth.from_file(tokens)
    return TokenAuth.from_config(tokens)


# -- throttling -------------------------------------------------------------------------------


class FailureThrottle:
    """Failed token attempts, counted per presented key and per client address within
    ``window`` seconds. A key that failed ``attempts`` times is refused (429) until the oldest
    of its failures leaves the window, whoever presents it; an address is refused for every key
    only after ``per_address`` failures (default ten times ``attempts``), which takes many
    different wrong keys. So a browser app that retries a wrong key stops being checked
    without locking out the correct keys of the same address, while guessing many keys is
    still cut off. Successful attempts are not counted."""

    def __init__(self, attempts: int = 10, window: float = 60.0, *,
                 per_address: int | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 max_clients: int = 10_000) -> None:
        per_address = attempts * 10 if per_address is None else per_address
        if attempts < 1 or per_address < 1 or window <= 0:
            raise ConfigurationError("The failed-token throttle needs attempts >= 1, "
                                     "per_address >= 1 and a positive window.")
        self.attempts = attempts
        self.per_address = per_address
        self.window = window
        self._clock = clock
        self._max_clients = max_clients
        self._failures: dict[str, deque[float]] = {}

    @staticmethod
    def _keys(client: str, token: str) -> tuple[str, str]:
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return f"address:{client}", f"key:{digest}"

    def _recent(self, key: str, now: float) -> deque[float]:
        q = self._failures.get(key)
        if q is None:
            return deque()
        while q and now - q[0] >= self.window:
            q.popleft()
        if not q:
            del self._failures[key]
        return q

    def retry_after(self, client: str, token: str = "") -> float | None:
        """Seconds until ``client`` may try ``token`` again, or None if it may try now."""
        now = self._clock()
        waits = []
        for key, limit in zip(self._keys(client, token), (self.per_address, self.attempts),
                              strict=True):
            q = self._recent(key, now)
            if len(q) >= limit:
                waits.append(max(0.0, self.window - (now - q[-limit])))
        return max(waits) if waits else None

    def address_blocked(self, client: str) -> bool:
        """Whether ``client`` is refused for every key (too many different wrong keys)."""
        return len(self._recent(self._keys(client, "")[0], self._clock())) >= self.per_address

    def failed(self, client: str, token: str = "") -> None:
        now = self._clock()
        for key in self._keys(client, token):
            if key not in self._failures and len(self._failures) >= self._max_clients:
                # forget the key whose last failure is oldest (bounded memory)
                oldest = min(self._failures, key=lambda c: self._failures[c][-1])
                del self._failures[oldest]
            self._recent(key, now)
            self._failures.setdefault(key, deque()).append(now)


# -- loopback --------------------------------------------------------------------------------

_LOCAL_NAMES = {"localhost", "localhost.", "ip6-localhost"}


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ``::1`` (with or without brackets)."""
    h = host.strip().lower().strip("[]")
    if h in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def host_header_is_loopback(value: str) -> bool:
    """Whether an HTTP ``Host`` header names a loopback address (port ignored)."""
    v = value.strip()
    if v.startswith("["):
        return is_loopback(v[1:].split("]", 1)[0])
    return is_loopback(v.rsplit(":", 1)[0] if v.count(":") == 1 else v)


def check_bind(host: str, auth: TokenAuth | None) -> None:
    """Refuse to listen beyond loopback without tokens."""
    if auth is None and not is_loopback(host):
        raise ConfigurationError(
            f"Refusing to listen on {host!r} without reviewer tokens: anyone who can reach that "
            f"address could approve tool calls. Configure tokens (--tokens FILE, or the "
            f"{ENV_TOKENS} / {ENV_TOKENS_FILE} environment variables) or bind to 127.0.0.1."
        )

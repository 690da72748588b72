"""Reviewer authentication: bearer tokens mapped to identities and roles.

Tokens come from a TOML or JSON file, or from the ``INTERLOCK_TOKENS`` environment variable
(JSON). Two shapes are accepted::

    # list form (TOML shown; JSON is the same structure)
    [[reviewers]]
    id = "alice"
    roles = ["dba", "ops"]
    token = "a-long-random-secret"          # or token_sha256 = "<hex digest of the token>"

    # mapping form (JSON): token -> identity
    {"a-long-random-secret": {"id": "alice", "roles": ["dba"]}}

Only SHA-256 digests of the tokens are kept in memory and a presented token is compared with
every configured digest in constant time. Without any configured token the server runs in
*local mode*: every request acts as reviewer ``local`` holding every role, and the server only
accepts loopback binds and loopback clients.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..decisions import Reviewer
from ..errors import ConfigurationError

ENV_TOKENS = "INTERLOCK_TOKENS"
"""JSON with the token configuration (either shape)."""
ENV_TOKENS_FILE = "INTERLOCK_TOKENS_FILE"
"""Path of a TOML or JSON token file."""
LOCAL_ID = "local"
MIN_TOKEN_LENGTH = 16
_RESERVED = ("system", "rule:", "middleware:", "policy")


@dataclass(frozen=True)
class Identity:
    """Who is calling. ``authenticated`` is False in local mode (no tokens configured)."""

    id: str
    roles: frozenset[str]
    authenticated: bool = True

    def reviewer(self) -> Reviewer | None:
        """The :class:`Reviewer` passed to the core; ``None`` in local mode (every role)."""
        return Reviewer(self.id, self.roles) if self.authenticated else None

    def may_decide(self, required: Sequence[str] | None) -> bool:
        """Whether this identity holds one of ``required`` (``None``: anyone may decide)."""
        if required is None or not self.authenticated:
            return True
        return bool(set(required) & self.roles)


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
    if rid.startswith(_RESERVED):
        raise ConfigurationError(
            f"{where}: reviewer id {rid!r} is reserved (ids starting with "
            f"{', '.join(repr(p) for p in _RESERVED)} name the system in the audit log)."
        )
    roles = raw.get("roles", [])
    if isinstance(roles, str) or not isinstance(roles, Sequence) or not all(
        isinstance(r, str) for r in roles
    ):
        raise ConfigurationError(f"{where}: 'roles' of {rid!r} must be a list of strings.")
    return Identity(rid.strip(), frozenset(roles))


class TokenAuth:
    """The configured tokens. Build it with :meth:`from_config`, :meth:`from_file` or
    :meth:`from_env`."""

    def __init__(self, entries: Iterable[tuple[bytes, Identity]]) -> None:
        self._entries = [_Entry(d, i) for d, i in entries]
        if not self._entries:
            raise ConfigurationError(
                "The token configuration has no tokens. Add at least one reviewer, or pass no "
                "tokens at all to run in local (loopback-only) mode."
            )
        if len({e.digest for e in self._entries}) != len(self._entries):
            raise ConfigurationError("The same token is configured twice; tokens must differ.")

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        ids = sorted({e.identity.id for e in self._entries})
        return f"TokenAuth(reviewers={ids})"

    @property
    def identities(self) -> list[Identity]:
        return [e.identity for e in self._entries]

    def authenticate(self, token: str) -> Identity | None:
        """The identity of ``token``, or None. Compares against every digest in constant time."""
        presented = _digest(token)
        found: Identity | None = None
        for entry in self._entries:
            if hmac.compare_digest(entry.digest, presented):
                found = entry.identity
        return found

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
            for token, raw in data.items():
                where = f"{source}, token for {raw!r}"
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
        """From a ``.toml`` or ``.json`` file."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"Cannot read the token file {str(p)!r}: {exc}.") from None
        try:
            data = tomllib.loads(text) if p.suffix.lower() == ".toml" else json.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise ConfigurationError(f"The token file {str(p)!r} is not valid: {exc}.") from None
        return cls.from_config(data, source=str(p))

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


def load_tokens(tokens: TokenConfig | None, *, use_env: bool = True) -> TokenAuth | None:
    """Normalise the ``tokens`` argument of :func:`create_app` / :func:`serve`."""
    if tokens is None:
        return TokenAuth.from_env() if use_env else None
    if isinstance(tokens, TokenAuth):
        return tokens
    if isinstance(tokens, str | Path):
        return TokenAuth.from_file(tokens)
    return TokenAuth.from_config(tokens)


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

"""The secret key that signs the audit log (HMAC-SHA256), kept outside the database.

Where the key comes from, first match wins:

1. ``INTERLOCK_AUDIT_KEY``: the key itself (at least 32 characters);
2. ``INTERLOCK_AUDIT_KEY_FILE``: a file holding it;
3. the default file, ``$XDG_CONFIG_HOME/interlock/audit.key`` (``~/.config/interlock/audit.key``).

A file that does not exist is created the first time an audit row is written (32 random bytes
as hex, mode 0600, in a directory of mode 0700). Verification never creates a key: without
one it says what it could not check. A key file readable by other users is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigurationError

ENV_KEY = "INTERLOCK_AUDIT_KEY"
ENV_KEY_FILE = "INTERLOCK_AUDIT_KEY_FILE"
MIN_KEY_CHARS = 32


def default_key_path() -> Path:
    """``$XDG_CONFIG_HOME/interlock/audit.key``, else ``~/.config/interlock/audit.key``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "interlock" / "audit.key"


@dataclass(frozen=True)
class AuditKey:
    """A loaded audit key. ``source`` says where it came from (for messages)."""

    secret: bytes
    source: str
    key_id: str = field(init=False, compare=False)
    """A public fingerprint of the key (stored in every row it signs)."""
    _keyed: hmac.HMAC = field(init=False, compare=False, repr=False)
    """The HMAC state after the key: each signature copies it (about a third cheaper than
    keying a new HMAC per row)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_id", hashlib.sha256(
            b"interlock-audit-key\x00" + self.secret).hexdigest()[:16])
        object.__setattr__(self, "_keyed", hmac.new(self.secret, digestmod=hashlib.sha256))

    def sign(self, data: bytes) -> str:
        mac = self._keyed.copy()
        mac.update(data)
        return mac.hexdigest()

    def __repr__(self) -> str:  # never show the secret
        return f"AuditKey(key_id={self.key_id!r}, source={self.source!r})"


def key_location() -> str:
    """Where the key is looked for, in words (for messages)."""
    if os.environ.get(ENV_KEY):
        return f"the environment variable {ENV_KEY}"
    path = os.environ.get(ENV_KEY_FILE)
    if path:
        return f"{path} ({ENV_KEY_FILE})"
    return f"{default_key_path()} (the default; set {ENV_KEY_FILE} or {ENV_KEY} to change it)"


_lock = threading.Lock()
_cache: dict[tuple[str | None, ...], AuditKey] = {}
"""Keys found, by the environment that says where they are."""


def _checked(secret: str, source: str) -> AuditKey:
    secret = secret.strip()
    if len(secret) < MIN_KEY_CHARS:
        raise ConfigurationError(
            f"The audit key from {source} has {len(secret)} characters; it needs at least "
            f"{MIN_KEY_CHARS}. Generate one with: python -c 'import secrets; "
            f"print(secrets.token_hex(32))'."
        )
    return AuditKey(secret.encode(), source)


def _read_file(path: Path) -> AuditKey:
    info = path.stat()
    if os.name == "posix" and info.st_mode & 0o077:
        raise ConfigurationError(
            f"The audit key file {path} can be read by other users (mode "
            f"{stat.filemode(info.st_mode)}). Restrict it with: chmod 600 {path}"
        )
    return _checked(path.read_text(encoding="utf-8"), str(path))


def _create_file(path: Path) -> None:
    """Write a new random key atomically; if another process wins the race, keep its key."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (secrets.token_hex(32) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails if the file appeared meanwhile: the first key stays
    except FileExistsError:
        pass
    finally:
        tmp.unlink()


def load_key(*, create: bool) -> AuditKey | None:
    """The audit key; ``None`` when there is none and ``create`` is false. Raises
    :class:`~interlock.ConfigurationError` for a key that is too short or a file that others
    can read."""
    environ = os.environ
    env = environ.get(ENV_KEY)
    # what the key's place depends on: looked up once per combination, not at every row
    cache_key = (env, environ.get(ENV_KEY_FILE), environ.get("XDG_CONFIG_HOME"),
                 environ.get("HOME"))
    found = _cache.get(cache_key)
    if found is not None:
        return found
    if env:
        key = _checked(env, f"the environment variable {ENV_KEY}")
        _cache[cache_key] = key
        return key
    path = Path(environ.get(ENV_KEY_FILE) or default_key_path()).expanduser()
    with _lock:
        if not path.exists():
            if not create:
                return None
            try:
                _create_file(path)
            except OSError as exc:
                raise ConfigurationError(
                    f"Cannot create the audit key file {path}: {exc}. Create it yourself "
                    f"(chmod 600) or point {ENV_KEY_FILE} at a writable place."
                ) from exc
        key = _read_file(path)
        _cache[cache_key] = key
        return key

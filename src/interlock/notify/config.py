"""The notification configuration: channels, people and delivery settings (a TOML file).

See docs/notifications.md for a complete example.
"""

from __future__ import annotations

import base64
import binascii
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ..authz import check_distinct_ids, reviewer_key, same_reviewer
from ..errors import ConfigurationError
from ..outbox import EVENT_TYPES, EventType

EMAIL_EVENTS: tuple[EventType, ...] = ("request.raised", "request.escalated")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WebhookEndpoint(_Strict):
    """One receiver. ``secret`` is a Standard Webhooks secret: ``whsec_`` + base64 (24 to 64
    random bytes)."""

    name: str = ""
    url: str
    secret: str
    events: list[EventType] = Field(default_factory=lambda: list(EVENT_TYPES))
    timeout: float = 10.0

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: str) -> str:
        secret_key(value)
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"webhook url {value!r} must start with http:// or https://")
        return value


class SlackSettings(_Strict):
    token: str
    """Bot token (``xoxb-...``): needs ``chat:write``."""
    signing_secret: str
    """The app's signing secret, to verify interactive callbacks."""
    channel: str
    """Default channel id or name for requests."""
    channels: dict[str, str] = Field(default_factory=dict)
    """Role -> channel, for requests limited to a role (and escalations to it)."""
    api_url: str = "https://slack.com/api/"
    events: list[EventType] = Field(default_factory=lambda: list(EVENT_TYPES))


class EmailSettings(_Strict):
    host: str = "localhost"
    port: int = 25
    starttls: bool = False
    ssl: bool = False
    username: str | None = None
    password: str | None = None
    sender: str = Field(alias="from")
    link_secret: str = Field(min_length=16)
    """Signs the decision links (keep it secret; at least 16 characters)."""
    link_ttl: float = 24 * 3600.0
    """Seconds a decision link stays valid."""
    timeout: float = 30.0
    events: list[EventType] = Field(default_factory=lambda: list(EMAIL_EVENTS))


class Person(_Strict):
    """A reviewer as the notification channels know them."""

    id: str
    roles: list[str] | None = None
    """``None``: the roles of the reviewer token with the same id, if any, else none."""
    email: str | None = None
    slack_user: str | None = None


class DispatchSettings(_Strict):
    max_attempts: int = Field(default=10, ge=1)
    backoff: float = Field(default=2.0, gt=0)
    """Seconds before the first retry; doubled after each failure."""
    backoff_max: float = Field(default=900.0, gt=0)
    poll_interval: float = Field(default=1.0, gt=0)
    lease: float = Field(default=60.0, gt=0)
    """Seconds a dispatcher holds a claimed event before another may take it over."""
    batch: int = Field(default=20, ge=1)
    retention_days: float | None = Field(default=30.0, gt=0)
    """Delivered events older than this are deleted by the dispatcher (about once an hour), so
    the outbox stays as large as the notifications of the last ``retention_days``; ``None``
    keeps them (prune with ``interlock outbox prune``)."""


class NotifyConfig(_Strict):
    public_url: str = "http://127.0.0.1:8000"
    """Where reviewers reach the server: links in messages point here."""
    webhooks: list[WebhookEndpoint] = Field(default_factory=list)
    slack: SlackSettings | None = None
    email: EmailSettings | None = None
    reviewers: list[Person] = Field(default_factory=list)
    dispatch: DispatchSettings = Field(default_factory=DispatchSettings)

    @field_validator("public_url")
    @classmethod
    def _public(cls, value: str) -> str:
        return value.rstrip("/")

    @model_validator(mode="after")
    def _one_entry_per_person(self) -> NotifyConfig:
        check_distinct_ids((p.id for p in self.reviewers), "[[reviewers]]")
        ids = [reviewer_key(p.id) for p in self.reviewers]
        if len(set(ids)) != len(ids):
            raise ValueError("a reviewer is listed twice; give each person one [[reviewers]] "
                             "entry")
        users = [p.slack_user for p in self.reviewers if p.slack_user]
        if len(set(users)) != len(users):
            raise ValueError("two reviewers have the same slack_user; a Slack user is one "
                             "reviewer")
        return self

    def person(self, *, slack_user: str | None = None, pid: str | None = None) -> Person | None:
        for p in self.reviewers:
            if (slack_user is not None and p.slack_user == slack_user) or (
                    pid is not None and same_reviewer(p.id, pid)):
                return p
        return None

    def request_url(self, thread_id: str) -> str:
        from urllib.parse import quote

        return f"{self.public_url}/#/t/{quote(thread_id, safe='')}"


def secret_key(secret: str) -> bytes:
    """The key bytes of a Standard Webhooks secret (``whsec_<base64>``)."""
    raw = secret.removeprefix("whsec_")
    try:
        key = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not 24 <= len(key) <= 64:
        raise ValueError(
            "webhook secret must be 'whsec_' followed by base64 of 24 to 64 random bytes; "
            "make one with: python -c \"import base64,os; "
            "print('whsec_'+base64.b64encode(os.urandom(32)).decode())\"")
    return key


def load_config(source: str | Path | Mapping[str, Any] | NotifyConfig) -> NotifyConfig:
    """A :class:`NotifyConfig` from a TOML file, parsed data or itself."""
    if isinstance(source, NotifyConfig):
        return source
    where = "notification configuration"
    if isinstance(source, str | Path):
        where = str(source)
        try:
            data: Any = tomllib.loads(Path(source).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigurationError(
                f"Cannot read the notification configuration {where!r}: {exc}.") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigurationError(f"{where!r} is not valid TOML: {exc}.") from None
    else:
        data = dict(source)
    try:
        config = NotifyConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'top level'}: {e['msg']}"
            for e in exc.errors())
        raise ConfigurationError(
            f"The notification configuration {where!r} is not valid: {problems}. See "
            f"docs/notifications.md for the format.") from None
    names = [w.name or w.url for w in config.webhooks]
    if len(set(names)) != len(names):
        raise ConfigurationError(
            f"{where!r}: two webhooks have the same name/url; give each a distinct 'name'.")
    return config

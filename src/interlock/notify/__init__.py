"""Notifications: deliver outbox events to webhooks, Slack and e-mail.

The core writes events into the outbox in the same commit as the change they announce
(:mod:`interlock.outbox`); this package delivers them. See docs/notifications.md.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..storage.base import Checkpointer
from .config import NotifyConfig, load_config
from .dispatcher import Channel, DeliveryFailed, Dispatcher, retry_event
from .webhook import WebhookChannel


def build_channels(config: NotifyConfig, store: Checkpointer, *,
                   role_of: Mapping[str, frozenset[str]] | None = None) -> list[Channel]:
    """The channels configured in ``config``. ``role_of``: reviewer id -> roles (from the
    token configuration), for people listed without roles."""
    channels: list[Channel] = [WebhookChannel(w, config) for w in config.webhooks]
    if config.slack is not None:
        from .slack import SlackChannel

        channels.append(SlackChannel(config.slack, config, store))
    if config.email is not None:
        from .email import EmailChannel

        channels.append(EmailChannel(config.email, config, dict(role_of or {})))
    return channels


__all__ = [
    "Channel",
    "DeliveryFailed",
    "Dispatcher",
    "NotifyConfig",
    "build_channels",
    "load_config",
    "retry_event",
]

"""Secrets kept out of the server's logs.

E-mail decision links carry their token in the URL's fragment, which no browser sends, so it
never appears in a request line. Links made before that carried it in the path
(``/notify/email/<token>``); the access log shows such paths with the token replaced, so
nobody who reads the log can decide with it.
"""

from __future__ import annotations

import logging
import re

ACCESS_LOGGER = "uvicorn.access"
_LINK_PATH = re.compile(r"(/notify/email/)(?!view\b|decide\b)[^/?#\s]+")
REDACTED = r"\1<redacted>"


def redact(text: str) -> str:
    """``text`` with every e-mail link token in a ``/notify/email/<token>`` path replaced."""
    return _LINK_PATH.sub(REDACTED, text)


class RedactLinkTokens(logging.Filter):
    """Rewrites the arguments of uvicorn's access records (and any message) that name a
    decision link's path."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def redact_access_log() -> None:
    """Install :class:`RedactLinkTokens` on uvicorn's access logger (once)."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, RedactLinkTokens) for f in logger.filters):
        logger.addFilter(RedactLinkTokens())

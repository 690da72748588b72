"""JSON log lines (``--log-format json``): one object per line, for log pipelines.

Every record of interlock's loggers (and, for ``interlock serve``, uvicorn's) becomes
``{"ts", "level", "logger", "message", ...}``; the records of stored events (logger
``interlock.events``, see :mod:`.hooks`) add ``event``, ``thread_id``, ``run_id``,
``tool_call_id``, ``interrupt_id``, ``actor`` and ``seq``. Every line carries the ``trace_id``
of the current span when tracing is on. Events carry ids only, never arguments, results,
messages or decision tokens; URL query values and JSON members named like credentials, bearer
and basic credentials, passwords in URLs and the token of an e-mail decision link that appear
in a message text are replaced by ``[redacted]``.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime

from .hooks import EVENT_IDS

_FIELDS = (*EVENT_IDS, "event", "actor", "seq")
# A name that holds a credential word at its start, after a separator or as a camelCase part
# (access_token, api_key, X-Amz-Signature, accessToken, clientSecret; not monkey). The
# quantifiers are bounded and a name starts only where no name character precedes it, so a
# long line is scanned in linear time.
_WORDS = "token|sig|signature|key|apikey|secret|password|passwd|pwd|code|credential|auth"
_CAMEL = ("Token|Sig|Signature|Key|Apikey|ApiKey|Secret|Password|Passwd|Pwd|Code|Credential|"
          "Auth")
_NAME = (rf"(?:(?i:(?:[\w.-]{{0,100}}[_.-])?(?:{_WORDS}))|[A-Za-z0-9]{{0,100}}[a-z0-9]"
         rf"(?:{_CAMEL}))[\w.-]{{0,100}}")
# A header-like "Name: value" whose name says it is a credential (Authorization: Token ...,
# X-Api-Key: ..., password: ...); its value may start with a scheme.
_HEADER = (r"(?i:(?:[\w-]{0,50}[_-])?(?:authorization|api[_-]?key|token|secret|password|"
           r"passwd|pwd|credentials?))")
_SECRETS = re.compile(
    rf"(?P<k>(?<![\w.-]){_NAME}=)[^&\s\"'<>]+"  # a query or form value
    # a JSON member ("token": "...", escaped quotes included, or a number) or a Python one
    rf"|(?P<j>\"{_NAME}\"\s{{0,20}}:\s{{0,20}})(?:\"(?:[^\"\\]|\\.){{0,100000}}\"|"
    rf"-?[0-9][0-9.eE+-]{{0,100}})"
    rf"|(?P<q>'{_NAME}'\s{{0,20}}:\s{{0,20}})'(?:[^'\\]|\\.){{0,100000}}'"
    rf"|(?P<h>(?<![\w.-]){_HEADER}\s{{0,5}}:[ \t]{{0,20}}(?i:(?:bearer|basic|token|digest)"
    rf"[ \t]{{1,20}})?)[^\s,;'\"]+"
    r"|(?P<b>\b(?i:bearer|basic)\s{1,20})[A-Za-z0-9._~+/=-]+"
    # the password of a URL's user (https://user:password@host, postgresql://u:p@h/db)
    r"|(?P<u>(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,30}://[^\s/@:]{0,200}:)[^\s/@]+(?=@)"
    r"|(?P<p>/notify/email/)[^\s?#\"'/]+")  # an e-mail decision link: the path is the token
_QUOTED = {"j": '"[redacted]"', "q": "'[redacted]'"}


def _redacted(m: re.Match[str]) -> str:
    group = m.lastgroup or ""  # the one alternative that matched: its kept prefix
    return (m.group(group) or "") + _QUOTED.get(group, "[redacted]")


def redact(text: str) -> str:
    """``text`` with credentials replaced by ``[redacted]``: URL query and form values, JSON
    and Python members and header-like lines named like credentials (also in camelCase),
    bearer and basic credentials, the password in a URL, and decision-link tokens."""
    return _SECRETS.sub(_redacted, text)


def json_lines_for(*loggers: str) -> None:
    """Give the handlers of these (e.g. uvicorn's) loggers the JSON format, with the same
    redaction (an access line holds the request's path)."""
    for name in loggers:
        for handler in logging.getLogger(name).handlers:
            handler.setFormatter(JsonFormatter())


def current_trace_id() -> str | None:
    """The trace id of the current OpenTelemetry span, if OpenTelemetry is loaded at all."""
    otel = sys.modules.get("opentelemetry.trace")
    if otel is None:
        return None
    ctx = otel.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


class JsonFormatter(logging.Formatter):
    """One JSON object per record (ASCII only: control characters are escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(), "logger": record.name,
            "message": redact(record.getMessage())}
        for name in _FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                out[name] = value
        if "trace_id" not in out and (trace_id := current_trace_id()) is not None:
            out["trace_id"] = trace_id
        if record.exc_info:
            out["error"] = redact(self.formatException(record.exc_info))
        return json.dumps(out, default=str)

"""How a job that repeats in the background (a sweep, a feed reader, a queue poller) reports
its failures: once per outage, not once per attempt.

When the database goes away, every background job of a server or worker fails at each of its
attempts, some of them several times a second. :class:`FailureLog` keeps that readable: the
first failure of an outage is logged as a warning — an :class:`~interlock.InterlockError`
(whose message already says what is wrong and what to do) as one line, anything else with
its traceback, since that is a bug to report — the same failure again only at debug level,
and one line when the job works again, saying how many attempts failed meanwhile. A
different failure during the outage is logged as a new warning.

:func:`stop_if_cancelled` ends such a job's loop when its task was asked to stop while an
attempt ran, even if that attempt ended normally or with an error all the same.
"""

from __future__ import annotations

import asyncio
import logging
import re

from .errors import InterlockError

_DIGITS = re.compile(r"\d+")


class FailureLog:
    """The failures of one repeating job ``what`` (e.g. ``"recovery sweep"``), written to
    ``log``. Call :meth:`failed` with each exception and :meth:`worked` after each attempt
    that succeeded."""

    def __init__(self, log: logging.Logger, what: str) -> None:
        self.log = log
        self.what = what
        self.failures = 0
        """Attempts that failed since the job last worked."""
        self._last: tuple[type[BaseException], str] | None = None

    def failed(self, exc: BaseException, retry: str = "retrying") -> None:
        """Report a failed attempt; ``retry`` says what happens next (e.g. "retrying in 5 s")."""
        self.failures += 1
        # the same failure, whatever its numbers (a prepared statement's name "_pg3_17", a
        # count of seconds, a port): its repeats go to debug
        key = (type(exc), _DIGITS.sub("#", str(exc)))
        if key == self._last:
            self.log.debug("%s failed again (%d attempts so far): %s", self.what,
                           self.failures, exc)
            return
        self._last = key
        if isinstance(exc, InterlockError):
            self.log.warning("%s failed: %s (%s; repeats of this error are logged at debug "
                             "level)", self.what, exc, retry)
        else:
            self.log.error("%s failed; %s", self.what, retry, exc_info=exc)

    def worked(self) -> None:
        """Report an attempt that succeeded (logs one line if attempts had failed before)."""
        if self.failures:
            self.log.warning("%s works again, after %d failed attempt%s", self.what,
                             self.failures, "" if self.failures == 1 else "s")
        self.failures = 0
        self._last = None


def stop_if_cancelled() -> None:
    """Raise ``CancelledError`` when the running task was asked to stop while its job ran: a
    job that ended normally or with an error all the same (a library that took the
    cancellation in) must not keep a background loop going after its stop."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError()

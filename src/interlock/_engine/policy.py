"""The review rules a call is under *now*: what this process's policy says of the tool and the
arguments that will run, joined with what was stored when the call paused.

A call's rules are stored with its request when it pauses. Between the pause and the decision
the agent may be redeployed with another policy (a tool now needs two approvals, or the
``dba`` role), an API process and a worker may run different versions, a reviewer's edit may
change the arguments a policy looks at, and a call whose outcome became unknown is asked about
again. Each time, the stricter of the stored rules and the policy's wins (:func:`tightened`):

* an edit makes a call the agent's ``after_model`` hooks judge on its own, as if the model
  had proposed it (:func:`classify_call`; a custom middleware's ``turn.review(...)`` rules
  included), never looser than the revision it replaces for the same tool;
* a decision on a stored revision is judged under the rules its tool's policy declares now
  as well (nothing is evaluated again: a ``when`` predicate and a description run once, when
  the call paused);
* the "outcome unknown" question is decided under the call's stored rules and its tool's.

So an approval counts only under the policy of the tool and arguments that will run, and a
rule stored at the pause is never loosened by a process that knows an older policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from inspect import isawaitable

from ..hitl import InterruptOn
from ..interrupts import PauseRun, enter_scope, exit_scope
from ..messages import AssistantMessage, Message, ToolCall
from ..middleware import Mark, ModelTurn, RejectMark, ReviewMark
from ..review_request import DECISION_TYPES, ReviewConfig
from ..storage.base import ReviewSettings
from .deps import RunDeps


@dataclass(frozen=True)
class Verdict:
    """What the agent's policy says of one call now."""

    mark: Mark | None
    """The hooks' mark: review (with its rules), reject, auto-approve; ``None``: the call
    runs without review."""
    known: bool = True
    """False: a hook asked a question (``interrupt()``) or failed, so nothing is known."""

    @property
    def review(self) -> ReviewMark | None:
        return self.mark if self.known and isinstance(self.mark, ReviewMark) else None

    @property
    def rejection(self) -> str | None:
        """The policy's message when it rejects the call outright."""
        return self.mark.message if self.known and isinstance(self.mark, RejectMark) else None


async def classify_call(deps: RunDeps, call: ToolCall, thread_id: str,
                        messages: Sequence[Message]) -> Verdict:
    """The agent's ``after_model`` hooks on ``call`` alone (no remembered approvals apply:
    a call judged here is one a person decides)."""
    message = AssistantMessage(content="", tool_calls=[call])
    turn = ModelTurn(thread_id=thread_id, message=message, messages=[*messages, message],
                     tools=deps.tools_by_name, editing=True)
    for mw in deps.middleware:
        if mw.after_model is None:
            continue
        turn.current_middleware = mw.name
        token = enter_scope([])
        try:
            out = mw.after_model(turn)
            if isawaitable(out):
                await out
        except PauseRun:
            return Verdict(None, known=False)
        except Exception:  # the hook fails on this call: the stored rules stand alone
            return Verdict(None, known=False)
        finally:
            exit_scope(token)
    return Verdict(turn.marks.get(call.id))


def tightened(config: ReviewConfig, rules: ReviewMark | ReviewConfig | InterruptOn, *,
              decisions: bool = True) -> ReviewConfig:
    """``config`` made at least as strict as ``rules``: only decisions both allow (``reject``
    where they share none, so someone can always settle the call), the roles both name
    (``config``'s where they share none: which side is newer is not known, and the stored
    rules were in force when the call paused), the larger number of approvals, no
    self-approval if either forbids it, no remembering if either forbids it.
    ``decisions=False``: the allowed decisions stay ``config``'s (an "outcome unknown"
    question offers its own)."""
    need = rules.approvals_required if isinstance(rules, ReviewConfig) else rules.approvals
    if (not decisions or all(d in rules.allowed_decisions for d in config.allowed_decisions)) \
            and (rules.reviewers is None or (config.reviewers is not None and all(
                r in rules.reviewers for r in config.reviewers))) \
            and need <= config.approvals_required \
            and (rules.self_approval is not False or config.self_approval is False) \
            and (rules.allow_remember or not config.allow_remember):
        return config  # nothing stricter (the usual case: the same policy)
    allowed = list(config.allowed_decisions)
    if decisions:
        allowed = [d for d in allowed if d in rules.allowed_decisions] or ["reject"]
    theirs = list(rules.reviewers) if rules.reviewers is not None else None
    if theirs is not None and config.escalated_at is not None:  # escalated: theirs too
        theirs += [r for r in rules.escalate_to or () if r not in theirs]
    roles = config.reviewers
    if roles is None:
        roles = theirs
    elif theirs is not None:
        roles = [r for r in roles if r in theirs] or roles
    need = max(config.approvals_required, need)
    self_ok = config.self_approval is not False and rules.self_approval is not False
    update = {
        "allowed_decisions": allowed, "reviewers": roles,
        "approvals": need if need > 1 else None,
        "self_approval": None if self_ok else False,
        "allow_remember": config.allow_remember and rules.allow_remember,
    }
    if all(getattr(config, k) == v for k, v in update.items()):
        return config
    return config.model_copy(update=update)


def stored_rules(settings: ReviewSettings, name: str, now: datetime) -> ReviewConfig:
    """The rules a journal entry's review settings hold (those of the revision decided, once
    one was), as the review config of a call of ``name``; escalation roles count as
    reviewers (``escalated_at``), as they may have decided it."""
    allowed = [d for d in DECISION_TYPES if d in settings.allowed_decisions]
    return ReviewConfig(
        action_name=name, allowed_decisions=allowed or ["reject"],
        reviewers=settings.reviewers, approvals=settings.approvals,
        self_approval=settings.self_approval, allow_remember=settings.allow_remember is not False,
        escalate_to=settings.escalate_to, escalated_at=now, revision=settings.revision or 1)


def settings_with(settings: ReviewSettings, config: ReviewConfig) -> ReviewSettings:
    """``settings`` holding the rules of ``config`` (the revision decided): ``settings``
    itself where they are the same (nothing new is stored)."""
    update = {
        "allowed_decisions": list(config.allowed_decisions), "reviewers": config.reviewers,
        "approvals": config.approvals, "self_approval": config.self_approval,
        "allow_remember": None if config.allow_remember else False,
        "escalate_to": config.escalate_to,
        "revision": config.revision if config.revision > 1 else None}
    if all(getattr(settings, k) == v for k, v in update.items()):
        return settings
    return settings.model_copy(update=update)

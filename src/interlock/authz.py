"""Who may do what: the authorisation rules of every surface, as pure functions.

The library, the review server, the web inbox, the terminal reviewer and the CLI all pass the
acting identity (a :class:`Reviewer`) to the same public core API, and the core asks this module.
No surface re-implements a rule, so they cannot differ. ``None`` as the identity means the
application itself (code that holds the agent object, or a server in local mode): it is
trusted with everything.

The model (see docs/security.md):

* **Deciding** a call needs one of the roles in its policy's ``reviewers`` (``None``: anyone).
  An edit that turns the call into a call of *another* tool must also satisfy that tool's
  policy: it must allow ``approve`` and the reviewer needs one of *its* ``reviewers``.
* **Cancelling** a thread closes every pending call, so it needs the right to decide every
  pending review call; a pending ``interrupt()`` question also needs the right to post.
* **Posting** to a thread (a new message, which starts a run) is for its creator and holders
  of the :data:`ADMIN_ROLE`.
* **Answering** an ``interrupt()`` question is for those who may post; in a thread the
  application started itself (no recorded creator) for any reviewer, like a request that
  names no ``reviewers``.
* **Reading** a thread (messages, journal, audit rows, event streams) is for those who may
  post, for a reviewer while the thread has a pending call or question that reviewer may
  decide or answer, and for a reviewer who decided one of its calls.
* **Revoking** a remembered approval is for those who may post, or who may decide that tool.
* **Remembered approvals** apply only to runs started by an identity that may post.
* Names starting with ``system``, ``rule:``, ``middleware:`` or ``policy`` are the system's own
  actors in the audit log; no person may act under them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigurationError, NotAuthorized
from .interrupts import Interrupt
from .review_request import ReviewRules, read_request
from .storage.base import RememberedApproval, ThreadRecord

ADMIN_ROLE = "admin"
"""Holders of this role may read and post to every thread (it does not let them decide
calls limited to other roles)."""

RESERVED_PREFIXES: tuple[str, ...] = ("system", "rule:", "middleware:", "policy")
"""Actor names that name the system itself in the audit log."""

TRUSTED_ACTOR = "local"
"""The actor recorded when the application itself (no identity) acts."""


@dataclass(frozen=True)
class Reviewer:
    """Who acts: an identity and the roles it holds (from a token, a login, ``--reviewer``)."""

    id: str
    roles: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not isinstance(self.id, str):
            raise ConfigurationError(
                f"Reviewer(id={self.id!r}): the id is a string, e.g. Reviewer('alice').")
        roles: object = self.roles
        if isinstance(roles, str | bytes) or not isinstance(roles, Iterable):
            raise ConfigurationError(
                f"Reviewer({self.id!r}, roles={roles!r}): roles is a collection of role names, "
                f"e.g. roles={{'dba'}} or ['dba', 'ops'] (a string would be read letter by "
                f"letter).")
        if not isinstance(roles, frozenset):
            roles = frozenset(roles)
            object.__setattr__(self, "roles", roles)
        if not all(isinstance(r, str) for r in roles):
            raise ConfigurationError(
                f"Reviewer({self.id!r}, roles=...): every role is a string, got "
                f"{sorted(map(repr, roles))}.")

    @property
    def is_admin(self) -> bool:
        return ADMIN_ROLE in self.roles

    @property
    def key(self) -> str:
        """The id as compared: two reviewers with the same key are one person."""
        return reviewer_key(self.id)

    def describe(self) -> str:
        return f"{self.id!r} (roles: {', '.join(sorted(self.roles)) or 'none'})"


@dataclass(frozen=True)
class CallPolicy:
    """What deciding one call requires: its tool and the roles its policy names."""

    tool_call_id: str
    name: str
    reviewers: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ToolPolicy:
    """A tool's review policy, as far as an edit *into* that tool is concerned."""

    name: str
    allows_approve: bool = True
    reviewers: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ThreadFacts:
    """What the access rules look at: the thread's creator, the roles its pending review
    calls need, whether an ``interrupt()`` question is pending, and who decided its calls."""

    thread_id: str
    created_by: str | None = None
    pending: tuple[CallPolicy, ...] = ()
    question_pending: bool = False
    deciders: frozenset[str] = field(default_factory=frozenset)


# -- names ----------------------------------------------------------------------------------


_SHOWN_AS_NOTHING = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0, *range(0x180B, 0x1810),
     *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])
"""Default-ignorable code points outside the format and control categories (a combining
grapheme joiner, Hangul fillers, variation selectors): they show as nothing."""


def _visible(text: str) -> str:
    """``text`` without the characters that show as nothing: control and format characters
    (zero-width spaces and joiners, soft hyphens, bidi controls, tags, a byte order mark),
    line and paragraph separators, and the default-ignorable code points above."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(ch for ch in text if ord(ch) not in _SHOWN_AS_NOTHING
                   and unicodedata.category(ch) not in ("Cc", "Cf", "Zl", "Zp"))


def reviewer_key(name: str) -> str:
    """The form under which reviewer ids are compared: NFKC-normalised, without characters
    that show as nothing, case-folded and stripped, so ``alice``, ``Alice``, ``ａｌｉｃｅ``
    (full-width) and ``al\u200bice`` (a zero-width space inside) are one person (a quorum
    counts them once; loading tokens or notification reviewers that collide is refused; a
    reserved name cannot be spelt around)."""
    return _visible(unicodedata.normalize("NFKC", name)).casefold().strip()


def same_reviewer(a: str | None, b: str | None) -> bool:
    """Whether two reviewer ids name the same person (see :func:`reviewer_key`)."""
    return a is not None and b is not None and reviewer_key(a) == reviewer_key(b)


def check_distinct_ids(ids: Iterable[str], where: str) -> None:
    """Refuse reviewer ids that are one person once normalised (``alice`` and ``Alice``;
    :func:`interlock.authz.reviewer_key`) but are spelt differently."""
    seen: dict[str, str] = {}
    for rid in ids:
        other = seen.setdefault(reviewer_key(rid), rid)
        if other != rid:
            raise ConfigurationError(
                f"{where} names reviewers {other!r} and {rid!r}, which are the same reviewer "
                f"once normalised (ids are compared NFKC-normalised and case-folded, so a "
                f"quorum counts them once): spell each person's id one way everywhere.")


def is_reserved(name: str) -> bool:
    return reviewer_key(name).startswith(RESERVED_PREFIXES)


def check_name(name: str) -> str:
    """The stripped ``name`` if a person may act under it; :class:`NotAuthorized` otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise NotAuthorized("A reviewer name must be a non-empty string; give who is acting.")
    if is_reserved(name):
        raise NotAuthorized(
            f"The reviewer name {name!r} is reserved: names starting with "
            f"{', '.join(repr(p) for p in RESERVED_PREFIXES)} name the system itself in the "
            f"audit log, so no person may act under them. Use your own name. Nothing was changed."
        )
    return name.strip()


def actor_of(reviewer: Reviewer | None) -> str:
    """The name written to the journal and the audit log."""
    return TRUSTED_ACTOR if reviewer is None else check_name(reviewer.id)


# -- deciding -------------------------------------------------------------------------------


def may_decide(reviewer: Reviewer | None, reviewers: Sequence[str] | None) -> bool:
    """Whether ``reviewer`` holds one of the roles ``reviewers`` (``None``: anyone may)."""
    if reviewer is None or reviewers is None:
        return True
    return bool(set(reviewers) & reviewer.roles)


def _check_roles(reviewer: Reviewer | None, roles: Sequence[str] | None,
                 refusal: Callable[[str, str], str]) -> None:
    """``NotAuthorized`` with ``refusal(who, roles)`` unless ``reviewer`` holds one of
    ``roles`` (:func:`may_decide`)."""
    if not may_decide(reviewer, roles):
        assert reviewer is not None and roles is not None
        raise NotAuthorized(refusal(reviewer.describe(), ", ".join(roles)))


def check_decision(thread_id: str, reviewer: Reviewer | None, call: CallPolicy,
                   target: ToolPolicy | None = None) -> None:
    """Deciding ``call``; with ``target`` (an edit into another tool) that tool's policy too."""
    if reviewer is not None:
        check_name(reviewer.id)
    _check_roles(reviewer, call.reviewers, lambda who, roles: (
        f"Reviewer {who} may not decide call {call.tool_call_id!r} ({call.name}) on thread "
        f"{thread_id!r}; it needs one of the roles: {roles}. Nothing was changed."))
    if target is None or target.name == call.name:
        return
    if not target.allows_approve:
        raise NotAuthorized(
            f"An edit of call {call.tool_call_id!r} ({call.name}) on thread {thread_id!r} into "
            f"tool {target.name!r} is refused: {target.name!r}'s own policy does not allow "
            f"'approve', so no edit can make it run. Edit the arguments of {call.name!r} "
            f"instead, or reject the call. Nothing was changed."
        )
    _check_roles(reviewer, target.reviewers, lambda who, roles: (
        f"Reviewer {who} may not edit call {call.tool_call_id!r} ({call.name}) on thread "
        f"{thread_id!r} into tool {target.name!r}: calls of {target.name!r} need one of the "
        f"roles: {roles}. Nothing was changed."))


def check_remember(thread_id: str, reviewer: Reviewer | None, call: CallPolicy,
                   tool: Sequence[ToolPolicy]) -> None:
    """Remembering an approval of ``call`` approves the later calls of its tool: only a
    reviewer who may decide those calls under the tool's own policies (``tool``) may do it.
    A reviewer who may decide this call only because it was escalated to them may approve it,
    but not remember the approval."""
    for policy in tool:
        _check_roles(reviewer, policy.reviewers, lambda who, roles: (
            f"Reviewer {who} may approve call {call.tool_call_id!r} ({call.name}) on thread "
            f"{thread_id!r} but not remember the approval: remembering approves the later "
            f"{call.name!r} calls of the thread, and those need one of the roles: {roles}. "
            f"Approve without 'remember'. Nothing was changed."))


def check_cancel(reviewer: Reviewer | None, facts: ThreadFacts) -> None:
    """Cancelling closes every pending call: the right to decide each of them is needed."""
    if reviewer is None:
        return
    check_name(reviewer.id)
    for call in facts.pending:
        if not may_decide(reviewer, call.reviewers):
            assert call.reviewers is not None
            raise NotAuthorized(
                f"Reviewer {reviewer.describe()} may not cancel thread {facts.thread_id!r}: "
                f"call {call.tool_call_id!r} ({call.name}) needs one of the roles: "
                f"{', '.join(call.reviewers)}. Nothing was changed."
            )
    if facts.question_pending and not may_answer(reviewer, facts):
        raise NotAuthorized(
            f"Reviewer {reviewer.describe()} may not cancel thread {facts.thread_id!r}: it "
            f"waits for an answer that only its creator or an {ADMIN_ROLE!r} may give. "
            f"Nothing was changed."
        )


# -- threads --------------------------------------------------------------------------------


def may_post(reviewer: Reviewer | None, facts: ThreadFacts) -> bool:
    """New messages and ``interrupt()`` answers: the creator, admins, the application."""
    if reviewer is None or reviewer.is_admin:
        return True
    return facts.created_by is not None and facts.created_by == reviewer.id


def may_answer(reviewer: Reviewer | None, facts: ThreadFacts) -> bool:
    """Answers to ``interrupt()`` questions: those who may post; anyone in a thread that the
    application started itself."""
    return facts.created_by is None or may_post(reviewer, facts)


def may_read(reviewer: Reviewer | None, facts: ThreadFacts) -> bool:
    if may_post(reviewer, facts):
        return True
    assert reviewer is not None
    if reviewer.id in facts.deciders:
        return True
    if facts.question_pending and may_answer(reviewer, facts):
        return True
    return any(may_decide(reviewer, c.reviewers) for c in facts.pending)


def check_post(reviewer: Reviewer | None, facts: ThreadFacts, what: str = "post to") -> None:
    if reviewer is not None:
        check_name(reviewer.id)
    if not may_post(reviewer, facts):
        assert reviewer is not None
        owner = repr(facts.created_by) if facts.created_by else "the application"
        raise NotAuthorized(
            f"Reviewer {reviewer.describe()} may not {what} thread {facts.thread_id!r}: "
            f"only its creator ({owner}) and holders of the {ADMIN_ROLE!r} role may. Start "
            f"a thread of your own instead. Nothing was changed."
        )


def check_answer(reviewer: Reviewer | None, facts: ThreadFacts) -> None:
    if reviewer is not None:
        check_name(reviewer.id)
    if not may_answer(reviewer, facts):
        check_post(reviewer, facts, "answer a question on")


def check_read(reviewer: Reviewer | None, facts: ThreadFacts) -> None:
    if not may_read(reviewer, facts):
        assert reviewer is not None
        raise NotAuthorized(
            f"Reviewer {reviewer.describe()} may not read thread {facts.thread_id!r}: it is "
            f"neither its creator nor an {ADMIN_ROLE!r}, has no pending call there it may "
            f"decide and decided none of its calls."
        )


def check_outcome(reviewer: Reviewer | None, facts: ThreadFacts,
                  call_reviewers: Sequence[str] | None, reviewed: bool) -> None:
    """How a call was decided: readers of its thread, and whoever could decide the call
    (``reviewed``: it paused for review; ``call_reviewers``: the roles it named), so that a
    reviewer who lost a race sees who decided it, and what, instead of an access error."""
    if may_read(reviewer, facts) or (reviewed and may_decide(reviewer, call_reviewers)):
        return
    assert reviewer is not None
    raise NotAuthorized(
        f"Reviewer {reviewer.describe()} may not see how call(s) of thread "
        f"{facts.thread_id!r} were decided: it may not read the thread and could not decide "
        f"the call."
    )


def check_admin(reviewer: Reviewer | None, what: str) -> None:
    """Operations that span every thread (the notification outbox, ...) are for the
    application itself (no reviewer) and holders of the admin role."""
    if reviewer is not None and not reviewer.is_admin:
        raise NotAuthorized(
            f"Reviewer {reviewer.describe()} may not {what}: that shows or changes data of "
            f"every thread, so it needs the {ADMIN_ROLE!r} role."
        )


def check_revoke(reviewer: Reviewer | None, facts: ThreadFacts,
                 tool: ToolPolicy) -> None:
    if reviewer is not None:
        check_name(reviewer.id)
    if may_post(reviewer, facts) or may_decide(reviewer, tool.reviewers):
        return
    assert reviewer is not None and tool.reviewers is not None
    raise NotAuthorized(
        f"Reviewer {reviewer.describe()} may not revoke the remembered approval of "
        f"{tool.name!r} on thread {facts.thread_id!r}: that needs the thread's creator, an "
        f"{ADMIN_ROLE!r}, or one of the roles: {', '.join(tool.reviewers)}. Nothing was changed."
    )


def remembered_applies(rule: RememberedApproval, rules: ReviewRules,
                       started_by: str | None) -> bool:
    """Whether the remembered approval ``rule`` lets a call through under ``rules`` (the
    tool's policy now): only where its creator could approve that call alone under them.
    Not once the tool needs several approvals, not where the run's starter made the rule
    and the tool forbids self-approval, not where the tool names roles the creator did not
    hold; and only while the policy lets approvals be remembered."""
    if not rules.allow_remember or "approve" not in rules.allowed_decisions:
        return False
    if rules.approvals > 1:
        return False
    if not rules.self_approval and same_reviewer(rule.created_by, started_by):
        return False
    if rules.reviewers is None:
        return True
    if rule.roles is None:
        return rule.app is True
    return bool(set(rule.roles) & set(rules.reviewers))


def remember_applies(starter: Reviewer | None, facts: ThreadFacts) -> bool:
    """Whether remembered approvals may let calls of a run started by ``starter`` through."""
    return may_post(starter, facts)


def readable(reviewer: Reviewer | None, facts: Iterable[ThreadFacts]) -> list[str]:
    """The ids of the threads ``reviewer`` may read, in the given order."""
    return [f.thread_id for f in facts if may_read(reviewer, f)]


def facts_of(thread: ThreadRecord) -> ThreadFacts:
    """The access facts of a stored thread row."""
    calls: list[CallPolicy] = []
    question = False
    for intr in thread.pending:
        if intr.kind != "review":
            question = True
            continue
        calls += [CallPolicy(a.tool_call_id, a.name, c.reviewer_roles)
                  for a, c in read_request(intr.value).pairs()]
    return ThreadFacts(thread_id=thread.thread_id, created_by=thread.created_by,
                       pending=tuple(calls), question_pending=question,
                       deciders=frozenset(thread.deciders))


ANYONE_KEY = "*"
"""The read key of a thread that every reviewer may read (see :func:`read_keys`)."""


def read_keys(thread: ThreadRecord) -> list[str]:
    """The keys under which stores index who may read a thread: a reviewer may read it
    (:func:`may_read`) exactly when one of its :func:`reviewer_keys` is among them. Its
    creator and deciders (``user:NAME``), the roles of its pending review calls
    (``role:NAME``), and :data:`ANYONE_KEY` while a call any reviewer may decide, or a
    question in a thread the application started, is pending. A row whose pending requests
    cannot be read gives only the creator and deciders.

    They depend only on the row's ``pending``, ``deciders`` and ``created_by``; records are
    values (a change is a new list), so a row that shares both lists with the last row asked
    about (most commits of a run change neither) has its keys."""
    global _last_keys
    last = _last_keys
    if last is not None and last[0] is thread.pending and last[1] is thread.deciders and \
            last[2] == thread.created_by:
        return list(last[3])
    keys = _read_keys(thread)
    _last_keys = (thread.pending, thread.deciders, thread.created_by, keys)
    return list(keys)


_last_keys: tuple[list[Interrupt], list[str], str | None, list[str]] | None = None
"""The lists of the last row :func:`read_keys` was asked about, and its keys (held, so that
the lists cannot be freed and their ids reused)."""


def _read_keys(thread: ThreadRecord) -> list[str]:
    keys = {f"user:{name}" for name in thread.deciders}
    if thread.created_by is not None:
        keys.add(f"user:{thread.created_by}")
    try:
        facts = facts_of(thread)
    except ValueError:
        return sorted(keys)
    if facts.question_pending and facts.created_by is None:
        keys.add(ANYONE_KEY)
    for call in facts.pending:
        if call.reviewers is None:
            keys.add(ANYONE_KEY)
        else:
            keys.update(f"role:{role}" for role in call.reviewers)
    return sorted(keys)


def reviewer_keys(reviewer: Reviewer) -> list[str]:
    """The read keys that let ``reviewer`` (not an admin) read a thread (:func:`read_keys`)."""
    return sorted({ANYONE_KEY, f"user:{reviewer.id}", *(f"role:{r}" for r in reviewer.roles)})


def starter_of(thread: ThreadRecord) -> Reviewer | None:
    """The identity that started the thread's current run (``None``: the application)."""
    s = thread.started_by
    return None if s is None else Reviewer(s, frozenset(thread.started_by_roles))


def starter_fields(reviewer: Reviewer | None) -> dict[str, Any]:
    """What a thread row records about the identity that starts a run."""
    return {"started_by": None if reviewer is None else check_name(reviewer.id),
            "started_by_roles": [] if reviewer is None else sorted(reviewer.roles)}

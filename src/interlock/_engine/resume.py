"""A resume's input, read once: what it answers (:class:`ResumeSpec`, built by every surface)
and which pending interrupt each part of it is for. Pure functions over the pending list; the
decisions themselves are validated by :func:`interlock.decisions.resolve_decisions`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..authz import Reviewer
from ..decisions import is_decision
from ..errors import InvalidDecision
from ..interrupts import Interrupt
from ..review_request import read_request
from ..subagents import ChildState
from ..text import check_input


@dataclass
class ResumeSpec:
    """One resume: decisions for a review request and/or answers to questions."""

    decisions: Any = None
    values: dict[str, Any] | None = None
    """interrupt id -> answer, for input interrupts."""
    value: Any = None
    has_value: bool = False
    interrupt_id: str | None = None
    reviewer: Reviewer | None = None
    actor: str = "local"
    command: Any = None
    has_command: bool = False
    reviews: dict[str, Any] | None = None
    """interrupt id -> decisions, when one resume answers several review interrupts."""
    routed_from: str | None = None
    """The parent thread this resume was given on, when it is passed to a sub-agent's thread
    (only such a resume may act on a sub-agent's thread)."""
    claim: Callable[[ChildState | None], Awaitable[None]] | None = None
    """For a routed resume: called right after the decisions are stored here, with this
    thread's state (``None``: not stored by this level), so that the parent records it."""

    def __post_init__(self) -> None:
        # every surface builds one of these: text that cannot be stored is refused here
        check_input(self.decisions, "the decisions")
        check_input(self.values, "the answers")
        check_input(self.value, "the answer")
        check_input(self.command, "the resume command")
        check_input(self.actor, "the reviewer id")

    def targets(self) -> list[str]:
        """The interrupt ids this resume names."""
        ids = [self.interrupt_id] if self.interrupt_id else []
        if self.has_command and isinstance(self.command, dict):
            ids += [k for k in self.command if isinstance(k, str)]
        ids += [*(self.reviews or {}), *(self.values or {})]
        return ids



def interpret_command(spec: ResumeSpec, pending: list[Interrupt]) -> None:
    """``Command(resume=...)``: decisions (also a single bare decision while a review is
    pending), ``{interrupt_id: answer}`` for any pending interrupts, or a plain answer."""
    raw = spec.command
    ids = {i.id: i for i in pending}
    if isinstance(raw, dict) and raw and set(raw) <= set(ids):
        values: dict[str, Any] = {}
        reviews: dict[str, Any] = {}
        for iid, answer in raw.items():
            (reviews if ids[iid].kind == "review" else values)[iid] = answer
        spec.values = values
        if len(reviews) == 1:
            [(spec.interrupt_id, spec.decisions)] = reviews.items()
        elif reviews:
            spec.reviews = reviews
    elif (isinstance(raw, dict) and "decisions" in raw) or isinstance(raw, list) or (
            is_decision(raw) and any(i.kind == "review" for i in pending)):
        spec.decisions = raw
    else:
        spec.value, spec.has_value = raw, True


def by_interrupt(pending: list[Interrupt], spec: ResumeSpec) -> dict[str, Any] | None:
    """Decisions for several review interrupts in one resume: ``spec.reviews``, or a mapping
    ``{tool_call_id: decision}`` whose calls belong to different review interrupts (one
    interrupt per call in ``per_call`` mode). None when the decisions target one interrupt."""
    if spec.reviews:
        return spec.reviews
    reviews = [i for i in pending if i.kind == "review"]
    raw = spec.decisions
    if (spec.interrupt_id is not None or len(reviews) < 2 or not isinstance(raw, Mapping)
            or not raw or is_decision(raw) or "decisions" in raw):
        return None
    owner = {c.request.tool_call_id: i.id for i in reviews for c in read_request(i.value).calls()}
    if not set(raw) <= set(owner):
        return None  # the single-interrupt path reports the unknown ids
    out: dict[str, dict[str, Any]] = {}
    for cid, decision in raw.items():
        out.setdefault(owner[cid], {})[cid] = decision
    return out


def target(thread_id: str, pending: list[Interrupt], kind: str, iid: str | None) -> Interrupt:
    """The pending interrupt of ``kind`` a resume is for: the one ``iid`` names, else the only
    one of that kind."""
    if iid is not None:
        intr = next(i for i in pending if i.id == iid)
        if intr.kind != kind:
            what = "decisions=[...]" if intr.kind == "review" else "value=..."
            raise InvalidDecision(
                thread_id, f"interrupt {iid!r} is a {intr.kind!r} interrupt; answer it "
                f"with {what}."
            )
        return intr
    matches = [i for i in pending if i.kind == kind]
    if not matches:
        other = "value=... (the thread waits for an answer to interrupt(...))" if kind == \
            "review" else "decisions=[...] (the thread waits for a review)"
        raise InvalidDecision(thread_id, f"there is no pending {kind!r} interrupt; "
                              f"resume with {other}.")
    if len(matches) > 1:
        raise InvalidDecision(
            thread_id, f"{len(matches)} {kind!r} interrupts are pending "
            f"({', '.join(i.id for i in matches)}); pass interrupt_id=... to choose one."
        )
    return matches[0]

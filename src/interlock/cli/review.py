"""``interlock review``: walk the pending requests in the terminal, one key per decision.

The console approval loop of the seed article, generalised: every decision goes through
``agent.resume(...)`` — the same validation, conflict detection and audit log as the HTTP API —
and the run continues right here with the agent's tools and model.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import click
from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from .. import display
from .._canonical import same_json
from ..agent import Agent, ThreadState
from ..authz import Reviewer, ThreadFacts, may_post, same_reviewer
from ..errors import (
    InterlockError,
    InterruptConflict,
    InvalidDecision,
    NoPendingInterrupt,
    NotAuthorized,
    StaleInterrupt,
    StaleRevision,
    ThreadBusy,
    ThreadNotFound,
)
from ..interrupts import Interrupt, PathStep
from ..messages import AssistantMessage
from ..result import RunResult
from ..review_request import ActionRequest, ReviewConfig, read_request
from ..storage.base import ThreadRecord
from ..subagent_tree import tool_at
from ..tools import ArgumentError
from ._common import (
    CliError,
    iter_threads,
    make_reviewer,
    out,
    reviewer_options,
    short,
    with_agent,
)
from ._editdoc import EditDocError, diff_lines, parse, render
from ._keys import read_key
from ._render import TitledPanel, json_block, message_lines, path_lines, request_panel

Outcome = Literal["decided", "gone", "invalid", "skip", "back"]

KEYS: list[tuple[str, str, str | None]] = [
    # key, label, decision type that must be allowed (None: always offered)
    ("a", "approve", "approve"),
    ("m", "approve & remember for this thread", "approve"),
    ("e", "edit", "edit"),
    ("r", "reject", "reject"),
    ("p", "respond", "respond"),
    ("v", "view conversation", None),
    ("s", "skip", None),
    ("q", "quit", None),
]

EDIT_HELP = [
    "// Edit the arguments of {name} (call {call_id}), then save and close the editor.",
    "// One section per argument: '== name (text) ==' holds text as written (line breaks",
    "// kept), '== name (JSON) ==' a JSON value. These // lines at the top are ignored.",
    "// Save an empty file to cancel the edit.",
]

CONFIRM_KEYS = [("y", "send this edit"), ("e", "edit again"), ("n", "discard the edit")]
RUN_KEYS = [("y", "yes, run it"), ("n", "no")]
COUNT_KEYS = [("y", "yes, run it once approved"), ("n", "no")]
WAITS = "approved (waiting for other reviewers)"
"""A session's tally of approvals that did not yet make the call run."""
REMEMBER_KEYS = [("y", "yes, approve and remember"), ("n", "no")]
AFTER_KEYS = [("f", "send the agent a follow-up message"), ("n", "next request")]

DID = {"approve": "approved", "edit": "edited, then approved", "reject": "rejected",
       "respond": "answered instead of running"}


@dataclass(frozen=True)
class Filters:
    """Which requests to review, as the web inbox's filters (the status is "waiting")."""

    only: tuple[str, ...] = ()
    tool: tuple[str, ...] = ()
    """Only calls of these tools (questions are left out when a tool is named)."""
    text: str | None = None
    """Only threads whose id, request, tool names, arguments or questions contain this text,
    ignoring case (the inbox's filter box, the same search on the server's store)."""

    def describe(self) -> str:
        parts = [f"thread {', '.join(self.only)}" if self.only else "",
                 f"tool {', '.join(self.tool)}" if self.tool else "",
                 f"matching {self.text!r}" if self.text else ""]
        return "; ".join(p for p in parts if p)


@dataclass
class Item:
    """One thing to decide: a call of a review request, or an interrupt() question."""

    state: ThreadState
    interrupt: Interrupt
    request: ActionRequest | None = None
    config: ReviewConfig | None = None
    index: int = 1
    total: int = 1

    @property
    def thread_id(self) -> str:
        return self.state.thread_id

    @property
    def key(self) -> tuple[str, str]:
        return item_key(self.thread_id, self.interrupt.id,
                        self.request.tool_call_id if self.request else None)


def item_key(thread_id: str, interrupt_id: str, tool_call_id: str | None) -> tuple[str, str]:
    """A call by its request (sub-agents number their calls on their own, so two requests
    shown on one thread may hold the same call id), a question by its id."""
    return (thread_id, f"{interrupt_id}:{tool_call_id}" if tool_call_id
            else f"input:{interrupt_id}")


class ReviewSession:
    def __init__(self, agent: Agent, reviewer: Reviewer, console: Console,
                 filters: Filters | None = None, *, watch: float | None = None) -> None:
        self.agent = agent
        self.reviewer = reviewer
        self.console = console
        self.filters = filters or Filters()
        self.only = set(self.filters.only)
        self.watch = watch
        """Seconds between looks for new requests once none waits (None: stop then)."""
        self.skipped: set[tuple[str, str]] = set()
        self.tally: Counter[str] = Counter()
        self.last_error = ""

    # ------------------------------------------------------------------ the queue

    def items_of(self, state: ThreadState) -> list[Item]:
        items: list[Item] = []
        for intr in state.interrupts:
            if intr.kind == "review":
                req = read_request(intr.value)
                total = len(req.action_requests)
                for n, (a, c) in enumerate(req.pairs(), start=1):
                    if not self.approved_already(c):
                        items.append(Item(state, intr, a, c, n, total))
            else:
                items.append(Item(state, intr))
        return [i for i in items if i.key not in self.skipped and self.wanted(i)]

    def approved_already(self, config: ReviewConfig) -> bool:
        """This reviewer's approval of the call is counted; it waits for other reviewers (a
        second approval by the same person would be refused), so it is not shown again."""
        return any(same_reviewer(a.by, self.reviewer.id) for a in config.approved_by or [])

    def wanted(self, item: Item) -> bool:
        tools = self.filters.tool
        return not tools or (item.request is not None and item.request.name in tools)

    def load(self, thread_id: str) -> ThreadState | None:
        try:
            return self.agent.get_thread(thread_id)
        except ThreadNotFound:
            return None

    def waiting(self) -> int:
        """How many calls and questions wait for a decision (the ones skipped in this
        session not counted)."""
        n = 0
        for rec in self.threads():
            for intr in rec.pending:
                if intr.kind != "review":
                    n += not self.filters.tool and \
                        item_key(rec.thread_id, intr.id, None) not in self.skipped
                    continue
                req = read_request(intr.value)
                n += sum(item_key(rec.thread_id, intr.id, a.tool_call_id) not in self.skipped
                         and (not self.filters.tool or a.name in self.filters.tool)
                         and not self.approved_already(c)
                         for a, c in req.pairs())
        return n

    def threads(self) -> Iterator[ThreadRecord]:
        """The waiting threads to review, newest first. A sub-agent's thread is left out: its
        requests are shown, with their path, on the parent thread and decided there."""
        rows = iter_threads(self.agent, "interrupted") if not self.filters.text else \
            self.search(self.filters.text)
        for rec in rows:
            if rec.parent is None and (not self.only or rec.thread_id in self.only):
                yield rec

    def search(self, text: str, page: int = 200) -> Iterator[ThreadRecord]:
        """The waiting threads that match ``text``, newest first, page by page."""
        before: Any = None
        before_id: str | None = None
        while True:
            rows = self.agent.list_threads(status="interrupted", search=text, limit=page,
                                           before=before, before_id=before_id)
            yield from rows
            if len(rows) < page:
                return
            before, before_id = rows[-1].updated_at, rows[-1].thread_id

    def whoami(self) -> Text:
        roles = ", ".join(sorted(self.reviewer.roles)) or "none"
        return Text.assemble(("reviewing as ", "dim"), (self.reviewer.id, "bold"),
                             (f" (roles: {roles})", "dim"))

    def next_item(self, prefer: str | None) -> Item | None:
        if prefer is not None and (state := self.load(prefer)) is not None:
            items = self.items_of(state)
            if items:
                return items[0]
        # oldest request first
        for rec in reversed(list(self.threads())):
            state = self.load(rec.thread_id)
            if state is None:
                continue
            items = self.items_of(state)
            if items:
                return items[0]
        return None

    # ------------------------------------------------------------------ the loop

    def run(self) -> None:
        self.console.print(Text.assemble(
            "interlock review · ", self.whoami(),
            (" — decisions are recorded under this name", "dim")))
        expired = self.agent.expire_due()
        if expired:
            self.console.print(f"{len(expired)} thread(s) had requests past their deadline; "
                               f"they were rejected as nobody decided in time.", style="dim")
        prefer: str | None = None
        shown = 0
        scope = self.filters.describe()
        scope = f" ({scope})" if scope else ""
        while True:
            item = self.next_item(prefer)
            if item is None:
                if shown == 0:
                    self.console.print(f"Nothing to review: no request is waiting for a "
                                       f"decision{scope}.")
                else:
                    self.console.print("No more pending requests.", style="bold green")
                if self.watch is None or (item := self.wait_for_request(scope)) is None:
                    break
            shown += 1
            prefer = item.thread_id
            if self.handle(item) == "quit":
                break
        self.summary()

    def wait_for_request(self, scope: str) -> Item | None:
        """--watch: look again every few seconds until a request waits (None: Ctrl+C)."""
        assert self.watch is not None
        self.console.print(f"Waiting for new requests{scope}… (Ctrl+C to stop)", style="dim")
        try:
            while True:
                time.sleep(self.watch)
                self.agent.expire_due()
                item = self.next_item(None)
                if item is not None:
                    return item
        except KeyboardInterrupt:
            self.console.print("stopped watching", style="dim")
            return None

    def summary(self) -> None:
        if not self.tally:
            return
        parts = [f"{n} {kind}" for kind, n in self.tally.items()]
        self.console.print("Session: " + ", ".join(parts) + ".")

    def handle(self, item: Item) -> str:
        self.show(item)
        allowed = set(item.config.allowed_decisions) if item.config else {"respond"}
        keys = [(k, label) for k, label, need in KEYS if need is None or need in allowed]
        if (item.config is not None and (not item.config.allow_remember
                                         or item.config.approvals_required > 1)) or (
                item.request is not None and item.request.reason == "outcome_unknown"):
            # the policy forbids it, or the call needs several approvals (a standing rule
            # would skip the others); or the call may have run before (remembering it would
            # let later calls of the tool run unseen)
            keys = [(k, label) for k, label in keys if k != "m"]
        while True:
            key = self.ask_key(keys)
            if key == "q":
                return "quit"
            if key == "s":
                self.skipped.add(item.key)
                self.tally["skipped"] += 1
                self.console.print("skipped", style="dim")
                return "skip"
            if key == "v":
                self.console.print(Panel(message_lines(item.state.messages),
                                         title="conversation", title_align="left"))
                continue
            outcome = self.decide(item, key)
            if outcome in ("decided", "gone", "skip"):
                return outcome
            # back / invalid: ask again

    def ask_key(self, keys: list[tuple[str, str]]) -> str:
        menu = Text("  ").join(Text.assemble((f"[{k}]", "bold"), f" {label}")
                               for k, label in keys)
        valid = {k for k, _ in keys}
        self.console.print(menu)
        while True:
            try:
                ch = read_key(lambda: self.console.print("> ", end=""))
            except (KeyboardInterrupt, EOFError):
                self.console.print("quit")
                return "q"
            except Exception as exc:  # no terminal to read a key from (OSError, termios.error)
                raise CliError(
                    f"interlock review reads single keys from a terminal, but none is "
                    f"available ({exc}); run it in an interactive terminal."
                ) from exc
            if not ch:  # the input ended (a pipe or a closed terminal): nothing more to read
                self.console.print("quit")
                return "q"
            ch = ch.lower()
            if ch in valid:
                label = next(label for k, label in keys if k == ch)
                self.console.print(label, style="bold")
                return ch
            self.console.print(f"press one of: {', '.join(k for k, _ in keys)}", style="dim")

    def show(self, item: Item) -> None:
        self.console.print()
        n = self.waiting()
        self.console.print(Text.assemble(
            (f"{n} request{'s' if n != 1 else ''} waiting", "bold yellow"), " · ",
            self.whoami()))
        if item.request is None or item.config is None:
            self.console.print(TitledPanel(
                Group(*path_lines(item.interrupt.path), json_block(item.interrupt.value)),
                Text.assemble(("thread ", ""), (display.one_line(item.thread_id), "bold"),
                              (" · the run asks a question", "")),
                border_style="yellow"))
            return
        call_id = item.request.tool_call_id
        messages = item.state.messages
        if item.request.path:  # a sub-agent's call: what that agent said, in its own thread
            raised = self.load(item.request.path[-1].thread_id)
            messages = raised.messages if raised is not None else []
        agent_text = next(
            (m.content for m in messages if isinstance(m, AssistantMessage)
             and any(c.id == call_id for c in m.tool_calls)), None)
        self.console.print(request_panel(
            item.request, item.config, thread_id=item.thread_id, preview=item.state.preview,
            agent_text=agent_text or None, index=item.index, total=item.total,
            now=self.agent.clock()))

    # ------------------------------------------------------------------ decisions

    def decide(self, item: Item, key: str) -> Outcome:
        try:
            if item.request is None:
                return self.answer_question(item)
            if key == "a":
                now = self.current(item)
                more = self.approvals_after_mine(now)
                if not self.confirm_run(now, Text.assemble(
                        "Approve ", (display.one_line(item.request.name), "bold"),
                        "? " + (self.quorum_text(now, more) if more else "It runs at once.")),
                        RUN_KEYS if not more else COUNT_KEYS):
                    return "back"
                return self.submit(now, {"type": "approve"}, WAITS if more else "approved")
            if key == "m":
                name = display.one_line(item.request.name)
                if not self.confirm_run(item, Text.assemble(
                        (f"Approve every later {name} call in this thread? ", "bold"),
                        f"{name} is not declared read-only. Once remembered, the agent's later "
                        f"{name} calls in this thread run without anyone seeing them, with "
                        f"whatever arguments the model chooses, until the approval is revoked."),
                        REMEMBER_KEYS):
                    return "back"
                return self.submit(item, {"type": "approve", "remember": "thread"},
                                   "approved & remembered")
            if key == "e":
                return self.edit(item)
            if key == "r":
                reason = click.prompt("Reason (optional, given to the agent)", default="",
                                      show_default=False).strip()
                decision: dict[str, Any] = {"type": "reject"}
                if reason:
                    decision["message"] = reason
                return self.submit(item, decision, "rejected")
            if key == "p":
                message = self.prompt_required("Answer (returned to the agent as the result)")
                if message is None:
                    return "back"
                return self.submit(item, {"type": "respond", "message": message}, "responded")
        except click.Abort:
            self.console.print("(back)", style="dim")
            return "back"
        return "back"

    def current(self, item: Item) -> Item:
        """``item`` as stored now, for a call that needs several approvals: another reviewer's
        approval since it was shown changes what one here does (it may run the call). The
        item as shown when the call is gone or was edited (sending the decision says so)."""
        if item.request is None or item.config is None or item.config.approvals_required <= 1:
            return item
        state = self.load(item.thread_id)
        for now in self.items_of(state) if state is not None else []:
            if now.key == item.key and now.config is not None \
                    and now.config.revision == item.config.revision:
                return now
        return item

    @staticmethod
    def approvals_after_mine(item: Item) -> int:
        """How many more approvals the call needs after this reviewer's (0: it runs)."""
        if item.config is None:
            return 0
        return max(0, item.config.approvals_required - len(item.config.approved_by or []) - 1)

    @staticmethod
    def quorum_text(item: Item, more: int) -> str:
        assert item.config is not None
        mine = len(item.config.approved_by or []) + 1
        return (f"This is approval {mine} of {item.config.approvals_required}: it runs once "
                f"{more} more reviewer{'s' if more != 1 else ''} approve"
                f"{'s' if more == 1 else ''}.")

    def confirm_run(self, item: Item, question: Text, keys: list[tuple[str, str]]) -> bool:
        """A call of a tool not declared read-only runs only after a yes (as in the web
        inbox); a read-only tool's approval is sent at once."""
        assert item.request is not None
        tool = tool_at(self.agent, item.request.name, item.request.path)
        if tool is not None and tool.read_only:
            return True
        self.console.print(question, style="yellow")
        if self.ask_key(keys) == "y":
            return True
        self.console.print("nothing was decided", style="dim")
        return False

    def prompt_required(self, text: str) -> str | None:
        answer = click.prompt(text, default="", show_default=False).strip()
        if not answer:
            self.console.print("an answer is required; nothing was decided", style="dim")
            return None
        return answer

    def answer_question(self, item: Item) -> Outcome:
        answer = self.prompt_required("Answer (JSON or text)")
        if answer is None:
            return "back"
        try:
            value: Any = json.loads(answer)
        except ValueError:
            value = answer
        return self.apply(item, lambda stored: self.agent.resume(
            item.thread_id, value=value, interrupt_id=item.interrupt.id,
            reviewer=self.reviewer, on_stored=stored), "answered")

    def submit(self, item: Item, decision: dict[str, Any], verb: str) -> Outcome:
        assert item.request is not None
        call_id = item.request.tool_call_id
        if item.config is not None:  # the decision is for the revision shown
            decision = {**decision, "revision": item.config.revision}
        return self.apply(item, lambda stored: self.agent.resume(
            item.thread_id, {call_id: decision}, interrupt_id=item.interrupt.id,
            reviewer=self.reviewer, on_stored=stored), verb)

    def apply(self, item: Item, resume: Callable[[Callable[[], None]], RunResult],
              verb: str) -> Outcome:
        self.last_error = ""
        stored: list[bool] = []
        try:
            with self.console.status("applying the decision and continuing the run…"):
                result = resume(lambda: stored.append(True))
        except InvalidDecision as exc:
            self.last_error = exc.problem
            self.console.print(Text.assemble(("not accepted: ", "bold red"),
                                             (display.visible(exc.problem), "")))
            return "invalid"
        except StaleRevision as exc:
            self.console.print(Text.assemble(("not applied: ", "bold yellow"),
                                             (display.visible(str(exc)), "")))
            return "gone"
        except (InterruptConflict, StaleInterrupt, NoPendingInterrupt):
            self.console.print(self.decided_elsewhere(item), style="yellow")
            return "gone"
        except (NotAuthorized, ThreadBusy) as exc:
            self.console.print(Text(display.visible(str(exc)), style="yellow"))
            self.skipped.add(item.key)
            return "skip"
        except InterlockError as exc:
            if not stored:  # the engine says whether the decision was stored before the error
                self.console.print(Text.assemble(("not applied: ", "bold red"),
                                                 (display.visible(str(exc)), "")))
                self.skipped.add(item.key)
                return "skip"
            self.tally[verb] += 1
            self.console.print(Text.assemble(
                (f"{verb}; ", "bold"), ("but the run then stopped: ", "bold red"),
                (display.visible(str(exc)), ""),
                (f"\n(thread {display.one_line(item.thread_id)!r} is marked failed; "
                 f"`interlock show {display.one_line(item.thread_id)}` shows the error)",
                 "dim")))
            return "decided"
        self.tally[verb] += 1
        self.report(item, result, verb)
        if result.status == "completed":
            self.follow_up(item)
        return "decided"

    def decided_elsewhere(self, item: Item) -> Text:
        """Who decided the request first, what and when (as the web inbox says it)."""
        outcome = None
        if item.request is not None:
            try:
                outcome = self.agent.call_outcome(item.thread_id, item.request.tool_call_id,
                                                  reviewer=self.reviewer)
            except InterlockError:
                outcome = None
        if outcome is None or outcome.decision is None:
            return Text("Someone else decided this request (or its deadline passed); "
                        "moving on.")
        when = ""
        if outcome.decided_at is not None:
            secs = max(0, int((self.agent.clock() - outcome.decided_at).total_seconds()))
            when = f" {secs} s ago" if secs < 120 else f" {secs // 60} min ago"
        said = f" ({display.one_line(outcome.message)})" if outcome.message else ""
        return Text(f"{display.one_line(outcome.decided_by or 'someone')} already "
                    f"{DID.get(outcome.decision, outcome.decision)} this call{when}{said}; "
                    f"nothing was sent. Moving on.")

    def follow_up(self, item: Item) -> None:
        """After a decision that finished the run: a new message to the agent, for those who
        may post to the thread (its creator and admins; the core decides)."""
        state = self.load(item.thread_id)
        if state is None or not self.may_post(state):
            return
        if self.ask_key(AFTER_KEYS) != "f":
            return
        message = self.prompt_required("Message to the agent")
        if message is None:
            return
        try:
            with self.console.status("sending the message and running the agent…"):
                result = self.agent.invoke(message, thread_id=item.thread_id,
                                           reviewer=self.reviewer)
        except InterlockError as exc:
            self.console.print(Text.assemble(("not sent: ", "bold red"),
                                             (display.visible(str(exc)), "")))
            return
        self.tally["follow-up"] += 1
        self.console.print(Text.assemble(("✔ ", "green"), ("follow-up sent", "bold green")))
        if result.status == "completed":
            self.console.print(Text.assemble(
                ("thread ", "dim"), (display.one_line(item.thread_id), "bold"),
                (" completed: ", "dim"), (short(result.output or "", 400), "")))
        elif result.interrupts:
            self.console.print(Text.assemble(("thread ", "dim"),
                                             (display.one_line(item.thread_id), "bold"),
                                             (" waits for a new decision", "dim")))

    def may_post(self, state: ThreadState) -> bool:
        return may_post(self.reviewer, ThreadFacts(thread_id=state.thread_id,
                                                   created_by=state.created_by))

    def report(self, item: Item, result: RunResult, verb: str) -> None:
        what = display.one_line(item.request.name) if item.request else "question"
        waits = verb == WAITS
        self.console.print(Text.assemble(("✔ ", "green"), ("approved" if waits else verb,
                                                            "bold green"), (f" {what}", "")))
        if waits and any(i.id == item.interrupt.id for i in result.interrupts):
            self.console.print(Text("your approval is counted; the call runs when the other "
                                    "approvals it needs are given", style="dim"))
        elif result.status == "completed":
            self.console.print(Text.assemble(
                ("thread ", "dim"), (display.one_line(item.thread_id), "bold"),
                (" completed: ", "dim"),
                (short(result.output or "", 400), "")))
        elif not any(i.id == item.interrupt.id for i in result.interrupts):
            self.console.print(Text.assemble(("thread ", "dim"),
                                             (display.one_line(item.thread_id), "bold"),
                                             (" continued and waits for a new decision",
                                              "dim")))

    def schema_problem(self, name: str, args: dict[str, Any],
                       path: list[PathStep] | None = None) -> str | None:
        tool = tool_at(self.agent, name, path)  # a sub-agent's call: that agent's tool
        if tool is None:
            return None
        try:
            tool.validate_args(args)
        except ArgumentError as exc:
            return (f"the edited arguments do not match the schema of tool {name!r}: "
                    f"{'; '.join(exc.errors)}. Expected arguments: "
                    f"{sorted(tool.args_schema.get('properties', {}))}.")
        return None

    def edit(self, item: Item) -> Outcome:
        assert item.request is not None
        request = item.request
        header = [h.format(name=display.one_line(request.name),
                           call_id=display.one_line(request.tool_call_id)) for h in EDIT_HELP]
        body = render(request.args)
        error: str | None = None
        while True:
            lines = list(header)
            if error:
                lines += [f"// error: {line}" for line in error.splitlines()]
            try:
                edited = click.edit("\n".join([*lines, body]) + "\n", extension=".txt",
                                    require_save=False)
            except click.ClickException as exc:
                self.console.print(Text(f"could not open the editor: {exc.format_message()} "
                                        f"(set $EDITOR)", style="red"))
                return "back"
            if edited is None:
                return "back"
            # the comment lines at the top go; a // further down belongs to a value
            rows = edited.split("\n")
            while rows and rows[0].lstrip().startswith("//"):
                rows.pop(0)
            text = "\n".join(rows)
            if not text.strip():
                self.console.print("edit cancelled (empty file); nothing was decided",
                                   style="dim")
                return "back"
            body = text.removesuffix("\n")
            try:
                args = parse(text)
            except EditDocError as exc:
                error = str(exc)
                self.console.print(Text.assemble(("cannot read the edit: ", "bold red"),
                                                 (error, ""), (" — reopening the editor", "dim")))
                continue
            if same_json(args, request.args):
                self.console.print("the arguments are unchanged; nothing was decided",
                                   style="dim")
                return "back"
            error = self.schema_problem(request.name, args, request.path)
            if error is not None:  # the same check resume() makes, before asking to confirm
                self.console.print(Text.assemble(("not accepted: ", "bold red"), (error, ""),
                                                 (" — reopening the editor", "dim")))
                continue
            self.console.print(TitledPanel(
                diff_lines(request.args, args),
                Text(f"your edit of {display.one_line(request.name)}: - proposed, + sent"),
                border_style="yellow"))
            key = self.ask_key(CONFIRM_KEYS)
            if key == "e":
                error = None
                continue
            if key != "y":
                self.console.print("edit discarded; nothing was decided", style="dim")
                return "back"
            outcome = self.submit(item, {"type": "edit", "edited_action": {
                "name": request.name, "args": args}}, "edited")
            if outcome != "invalid":
                return outcome
            error = self.last_error
            self.console.print("reopening the editor", style="dim")


@click.command("review", short_help="Decide pending requests in the terminal, one key each.")
@click.option("--thread", "only", metavar="THREAD", multiple=True,
              help="Only review this thread (repeatable).")
@click.option("--tool", "tools", metavar="TOOL", multiple=True,
              help="Only calls of this tool (repeatable).")
@click.option("--search", "text", metavar="TEXT", default=None,
              help="Only threads whose id, request, tool names, arguments or questions contain "
                   "TEXT, ignoring case (the web inbox's filter box).")
@click.option("--watch", is_flag=True,
              help="When no request waits, wait for new ones instead of exiting (Ctrl+C "
                   "stops).")
@click.option("--interval", type=click.FloatRange(min=0.05), default=2.0, show_default=True,
              help="With --watch: seconds between looks for new requests.")
@reviewer_options
@with_agent(purpose="interlock review")
def review(agent: Agent, only: tuple[str, ...], tools: tuple[str, ...], text: str | None,
           watch: bool, interval: float, reviewer: str | None,
           roles: tuple[str, ...]) -> None:
    """Walk through the pending requests in the terminal and decide each with one key.

    For each gated tool call it shows the thread's request, what the agent said, the tool,
    the description and the arguments, then offers the decisions the call allows:

    \b
      a  approve            m  approve and remember for this thread
      e  edit the arguments in $EDITOR (one section per argument, text as text;
         checked against the tool's schema, the editor reopens with the error if
         it does not fit; the changes are shown before they are sent)
      r  reject, with an optional reason for the agent
      p  respond: answer in place of the tool (for ask-the-user tools)
      v  view the conversation      s  skip      q  quit

    As in the web inbox, approving a tool not declared read-only, and approving and
    remembering, ask first (y / n). When your decision finishes a run on a thread you may
    post to, you may send the agent a follow-up message (f). When someone else decided a
    request first, it says who, what and when. --tool and --search narrow the queue;
    --watch waits for new requests once none is left.

    Decisions are recorded under --reviewer NAME (or $INTERLOCK_REVIEWER; required, shown on
    screen) and the run continues here with the agent's tools and model, so --agent is
    required (--db alone can list and show threads but not continue runs).

    \b
    Examples:
      interlock review --agent interlock.demo:agent --reviewer alice
      INTERLOCK_REVIEWER=alice interlock review --agent myapp.agents:agent \\
          --db postgresql://review@db/interlock --role dba
    """
    who = make_reviewer(reviewer, roles, command="interlock review")
    session = ReviewSession(agent, who, out(), Filters(only, tools, text or None),
                            watch=interval if watch else None)
    for thread_id in only:
        agent.get_thread(thread_id)  # ThreadNotFound for a typo
    session.run()

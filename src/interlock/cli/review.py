"""``interlock review``: walk the pending requests in the terminal, one key per decision.

The console approval loop of the seed article, generalised: every decision goes through
``agent.resume(...)`` — the same validation, conflict detection and audit log as the HTTP API —
and the run continues right here with the agent's tools and model.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import click
from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from .. import display
from ..agent import Agent, ThreadState
from ..authz import Reviewer
from ..errors import (
    InterlockError,
    InterruptConflict,
    InvalidDecision,
    NoPendingInterrupt,
    NotAuthorized,
    StaleInterrupt,
    ThreadBusy,
    ThreadNotFound,
)
from ..hitl import ActionRequest, HITLRequest, ReviewConfig
from ..interrupts import Interrupt, PathStep
from ..messages import AssistantMessage
from ..result import RunResult
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
from ._render import json_block, message_lines, path_lines, request_panel

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
                 only: tuple[str, ...]) -> None:
        self.agent = agent
        self.reviewer = reviewer
        self.console = console
        self.only = set(only)
        self.skipped: set[tuple[str, str]] = set()
        self.tally: Counter[str] = Counter()
        self.last_error = ""

    # ------------------------------------------------------------------ the queue

    def items_of(self, state: ThreadState) -> list[Item]:
        items: list[Item] = []
        for intr in state.interrupts:
            if intr.kind == "review":
                req = HITLRequest.of(intr.value)
                total = len(req.action_requests)
                for n, (a, c) in enumerate(zip(req.action_requests, req.review_configs,
                                               strict=True), start=1):
                    items.append(Item(state, intr, a, c, n, total))
            else:
                items.append(Item(state, intr))
        return [i for i in items if i.key not in self.skipped]

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
                    n += item_key(rec.thread_id, intr.id, None) not in self.skipped
                    continue
                value = intr.value
                req = value if isinstance(value, HITLRequest) else \
                    HITLRequest.model_validate(value)
                n += sum(item_key(rec.thread_id, intr.id, a.tool_call_id) not in self.skipped
                         for a in req.action_requests)
        return n

    def threads(self) -> Iterator[ThreadRecord]:
        """The waiting threads to review, newest first. A sub-agent's thread is left out: its
        requests are shown, with their path, on the parent thread and decided there."""
        for rec in iter_threads(self.agent, "interrupted"):
            if rec.parent is None and (not self.only or rec.thread_id in self.only):
                yield rec

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
        while (item := self.next_item(prefer)) is not None:
            shown += 1
            prefer = item.thread_id
            if self.handle(item) == "quit":
                break
        else:
            if shown == 0:
                scope = " in the selected threads" if self.only else ""
                self.console.print(f"Nothing to review: no request is waiting for a "
                                   f"decision{scope}.")
            else:
                self.console.print("No more pending requests.", style="bold green")
        self.summary()

    def summary(self) -> None:
        if not self.tally:
            return
        parts = [f"{n} {kind}" for kind, n in self.tally.items()]
        self.console.print("Session: " + ", ".join(parts) + ".")

    def handle(self, item: Item) -> str:
        self.show(item)
        allowed = set(item.config.allowed_decisions) if item.config else {"respond"}
        keys = [(k, label) for k, label, need in KEYS if need is None or need in allowed]
        if item.config is not None and not item.config.allow_remember:
            keys = [(k, label) for k, label in keys if k != "m"]  # the policy forbids it
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
            self.console.print("> ", end="")
            try:
                ch = click.getchar()
            except (KeyboardInterrupt, EOFError):
                self.console.print("quit")
                return "q"
            except Exception as exc:  # no terminal to read a key from (OSError, termios.error)
                raise CliError(
                    f"interlock review reads single keys from a terminal, but none is "
                    f"available ({exc}); run it in an interactive terminal."
                ) from exc
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
            self.console.print(Panel(
                Group(*path_lines(item.interrupt.path), json_block(item.interrupt.value)),
                title=Text.assemble(("thread ", ""), (display.one_line(item.thread_id), "bold"),
                                    (" · the run asks a question", "")),
                title_align="left", border_style="yellow"))
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
                return self.submit(item, {"type": "approve"}, "approved")
            if key == "m":
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
        except (InterruptConflict, StaleInterrupt, NoPendingInterrupt):
            self.console.print("Someone else decided this request (or its deadline passed); "
                               "moving on.", style="yellow")
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
        return "decided"

    def report(self, item: Item, result: RunResult, verb: str) -> None:
        what = display.one_line(item.request.name) if item.request else "question"
        self.console.print(Text.assemble(("✔ ", "green"), (verb, "bold green"),
                                         (f" {what}", "")))
        if result.status == "completed":
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
            if args == request.args:
                self.console.print("the arguments are unchanged; nothing was decided",
                                   style="dim")
                return "back"
            error = self.schema_problem(request.name, args, request.path)
            if error is not None:  # the same check resume() makes, before asking to confirm
                self.console.print(Text.assemble(("not accepted: ", "bold red"), (error, ""),
                                                 (" — reopening the editor", "dim")))
                continue
            self.console.print(Panel(diff_lines(request.args, args),
                                     title=f"your edit of {request.name}: - proposed, + sent",
                                     title_align="left", border_style="yellow"))
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
@reviewer_options
@with_agent(purpose="interlock review")
def review(agent: Agent, only: tuple[str, ...], reviewer: str | None,
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
    session = ReviewSession(agent, who, out(), only)
    for thread_id in only:
        agent.get_thread(thread_id)  # ThreadNotFound for a typo
    session.run()

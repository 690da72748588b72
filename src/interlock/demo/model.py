"""The demo's scripted operations model: realistic tool calls without an API key.

``ops_model(messages)`` follows a script: from the latest user request and the tool results
since then it picks the next step of one of the four tasks the demo queues (and close variants
of their wording) — look before changing anything, ask when it needs a decision, explain what
happened when a reviewer said no. It is not a language model: a message outside those tasks,
such as a follow-up that changes one ("only before 2023"), gets a short explanation of what it
can do (``interlock demo --model ...`` talks to a real model).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from ..models.scripted import Reply
from .sample import COMPLAINING_CUSTOMER, LATE_ORDER_ID, RETENTION_CUTOFF

Step = tuple[ToolCall, ToolMessage]
Scenario = Callable[[str, list[Step]], Reply]

EDIT_MARKER = "\n\nTool result:\n"


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def _result_text(msg: ToolMessage) -> str:
    """The tool's own output (without the notice added when a reviewer edited the call)."""
    if msg.decision == "edit" and EDIT_MARKER in msg.content:
        return msg.content.split(EDIT_MARKER, 1)[1]
    return msg.content


def _rows(msg: ToolMessage) -> list[dict[str, Any]]:
    try:
        data = json.loads(_result_text(msg))
    except ValueError:
        return []
    rows = data.get("rows") if isinstance(data, dict) else None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _failed(step: Step) -> str | None:
    call, result = step
    if result.status == "success":
        return None
    return f"`{call.name}` failed: {result.content}"


def _dollars(cents: int) -> str:
    return f"${cents / 100:,.2f}"


# ---------------------------------------------------------------------------- the tasks


def cleanup(task: str, steps: list[Step]) -> Reply:
    where = f"status = 'cancelled' AND created_at < '{RETENTION_CUTOFF}'"
    if not steps:
        return ("I'll check how many cancelled orders are past the retention period before "
                "deleting anything.",
                [_call("execute_sql", query=f"SELECT COUNT(*) AS n FROM orders WHERE {where}")])
    if len(steps) == 1:
        if (problem := _failed(steps[0])) is not None:
            return f"I could not count the orders: {problem}"
        rows = _rows(steps[0][1])
        n = int(rows[0].get("n", 0)) if rows else 0
        if n == 0:
            return f"There are no cancelled orders from before {RETENTION_CUTOFF}; nothing to do."
        return (f"There are {n} cancelled orders created before {RETENTION_CUTOFF}. Deleting "
                f"them needs a DBA's approval, so I've asked for it.",
                [_call("execute_sql", query=f"DELETE FROM orders WHERE {where}")])
    if (problem := _failed(steps[-1])) is not None:
        return f"The deletion did not go through: {problem}"
    return (f"Done: {_result_text(steps[-1][1])} The cancelled orders from before "
            f"{RETENTION_CUTOFF} are gone; newer orders were not touched.")


def late_order(task: str, steps: list[Step]) -> Reply:
    m = re.search(r"#?(\d{3,})", task)
    order_id = int(m.group(1)) if m else LATE_ORDER_ID
    if not steps:
        return (f"Let me look up order #{order_id} first.",
                [_call("read_data", table="orders", id=order_id)])
    if len(steps) == 1:
        rows = _rows(steps[0][1])
        if not rows:
            return f"I could not find order #{order_id}, so I did not write to anyone."
        return ("The order shipped but has not arrived. Let me find the customer.",
                [_call("read_data", table="customers", id=int(rows[0]["customer_id"]))])
    if len(steps) == 2:
        rows = _rows(steps[1][1])
        if not rows:
            return "I could not find the customer of that order, so I did not write to anyone."
        name = str(rows[0]["name"])
        first = name.split()[0]
        body = (f"Dear {first},\n\nyour order #{order_id} left our warehouse but is taking "
                f"longer than it should. We are sorry about the wait. We are tracking the "
                f"parcel with the carrier and will write again as soon as we know more.\n\n"
                f"Kind regards,\nThe shop team")
        return (f"I've drafted an apology to {name}. It goes to a customer, so a reviewer "
                f"checks it first.",
                [_call("send_email", to=str(rows[0]["email"]),
                       subject=f"Your order #{order_id} is delayed", body=body)])
    last = steps[-1][1]
    if (problem := _failed(steps[-1])) is not None:
        return f"The e-mail was not sent: {problem}"
    edited = " A reviewer adjusted the e-mail before it went out." if last.decision == "edit" \
        else ""
    return f"{_result_text(last)}{edited} I'll follow up when the carrier has news."


def goodwill(task: str, steps: list[Step]) -> Reply:
    m = re.search(r"(?:[Cc]ustomer\s+)?([A-Z][a-z]+ [A-Z][a-z]+)", task)
    name = m.group(1) if m else COMPLAINING_CUSTOMER
    if not steps:
        safe = name.replace("'", "''")
        return (f"Let me find {name}'s account.",
                [_call("execute_sql", query="SELECT id, name, email, credit_cents FROM "
                       f"customers WHERE name = '{safe}'")])
    rows = _rows(steps[0][1])
    if not rows:
        return f"I could not find a customer named {name}, so I changed nothing."
    customer = rows[0]
    cid, credit = int(customer["id"]), int(customer.get("credit_cents") or 0)
    if len(steps) == 1:
        return (f"Found {name} (customer #{cid}). How much credit to give is your call.",
                [_call("ask_user", question=f"How much store credit should I give {name} "
                       f"(customer #{cid}, current credit {_dollars(credit)})? An amount in "
                       f"dollars, e.g. 20.")])
    if len(steps) == 2:
        answer = _result_text(steps[1][1])
        amount = re.search(r"(\d+(?:[.,]\d{1,2})?)", answer)
        if amount is None:
            return (f"I could not find an amount in your answer ({answer!r}), so I did not "
                    f"change {name}'s credit. Tell me an amount in dollars.")
        cents = round(float(amount.group(1).replace(",", ".")) * 100)
        return (f"I'll add {_dollars(cents)} of store credit to {name}'s account; changing "
                f"customer data needs a DBA's approval.",
                [_call("execute_sql", query=f"UPDATE customers SET credit_cents = credit_cents"
                       f" + {cents} WHERE id = {cid}")])
    if (problem := _failed(steps[-1])) is not None:
        return f"The credit was not added: {problem}"
    return f"Done: {name}'s store credit was increased ({_result_text(steps[-1][1])})"


def weekly_report(task: str, steps: list[Step]) -> Reply:
    if not steps:
        return ("I'll pull the order figures first.",
                [_call("execute_sql", query="SELECT status, COUNT(*) AS orders, "
                       "ROUND(SUM(total_cents) / 100.0, 2) AS revenue FROM orders "
                       "GROUP BY status ORDER BY orders DESC")])
    rows = _rows(steps[0][1])
    lines = [f"  {r['status']:<10} {r['orders']:>5} orders  ${r['revenue']:>12,.2f}"
             for r in rows]
    table = "\n".join(lines) or "  (no orders)"
    if len(steps) == 1:
        return ("Here is the summary for ops.",
                [_call("send_email", to="ops@example.com", subject="Weekly order summary",
                       body=f"Hello ops,\n\norders by status:\n{table}\n\n-- ops assistant")])
    if len(steps) == 2:
        if (problem := _failed(steps[-1])) is not None:
            return f"The summary was not sent: {problem}"
        revenue = sum(float(r["revenue"] or 0) for r in rows
                      if r["status"] in ("shipped", "delivered"))
        return ("Sent to ops. Finance gets the revenue figures too.",
                [_call("send_email", to="finance@example.com", subject="Weekly revenue figures",
                       body=f"Hello finance,\n\nrevenue of shipped and delivered orders: "
                       f"${revenue:,.2f}\n\n{table}\n\n-- ops assistant")])
    if (problem := _failed(steps[-1])) is not None:
        return f"The finance e-mail was not sent: {problem}"
    return "Sent the weekly summary to ops@example.com and the revenue figures to finance."


TASKS: list[tuple[tuple[str, ...], Scenario]] = [
    (("delete", "clean", "purge"), cleanup),
    (("late", "delay"), late_order),
    (("credit", "complain"), goodwill),
    (("summary", "report"), weekly_report),
]

HELP = (
    "I'm the demo's scripted model, so I only know a few tasks: cleaning up old cancelled "
    "orders, writing to the customer of a late order (e.g. #1042), giving a customer store "
    "credit, and sending the weekly order summary. Start `interlock demo --model "
    "openai:gpt-4.1-mini` (with OPENAI_API_KEY set) to talk to a real model."
)


def _declined(steps: list[Step]) -> str | None:
    """What to say when a reviewer rejected the last call, or nobody decided in time."""
    if not steps:
        return None
    call, result = steps[-1]
    if result.decision == "reject":
        reason = result.content.split(" Reason: ", 1)[1] if " Reason: " in result.content \
            else None
        why = f" (reason: {reason})" if reason else ""
        return (f"Understood: the reviewer rejected `{call.name}`{why}, so I did not run it and "
                f"changed nothing. Tell me if you want me to do something else.")
    if result.decision == "expire":
        return (f"No reviewer decided on `{call.name}` in time, so it did not run and nothing "
                f"changed. Ask me again when someone can review it.")
    return None


def ops_model(messages: Sequence[Message]) -> Reply:
    """Next step of the demo agent, decided from the conversation."""
    start = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=None)
    if start is None:
        return HELP
    task = messages[start].content
    results = {m.tool_call_id: m for m in messages[start + 1:] if isinstance(m, ToolMessage)}
    steps: list[Step] = [
        (c, results[c.id])
        for m in messages[start + 1:] if isinstance(m, AssistantMessage)
        for c in m.tool_calls if c.id in results
    ]
    if (declined := _declined(steps)) is not None:
        return declined
    lowered = task.lower()
    for words, scenario in TASKS:
        if any(w in lowered for w in words):
            return scenario(task, steps)
    return HELP


SCENARIOS: list[tuple[str, str]] = [
    ("cleanup-cancelled-orders",
     f"The orders table is getting big. Delete the cancelled orders created before "
     f"{RETENTION_CUTOFF[:4]}; they are past the retention period."),
    ("late-order-1042",
     f"Order #{LATE_ORDER_ID} is late. Let the customer know and apologise."),
    ("goodwill-credit",
     f"Customer {COMPLAINING_CUSTOMER} complained that her parcel arrived damaged. Give her "
     f"some store credit."),
    ("weekly-report",
     "Send this week's order summary to ops and the revenue figures to finance."),
]
"""The runs ``interlock demo`` queues: ``(thread_id, user request)``."""

"""Text search and counts of the thread list, from stored columns, on every backend."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from interlock import Interrupt
from interlock.storage.base import search_text
from test_storage_conformance import T0, create, run, thread

if TYPE_CHECKING:
    from conftest import StoreFactory


def review(iid: str, name: str, args: dict[str, object]) -> Interrupt:
    return Interrupt(id=iid, kind="review", created_at=T0, value={
        "action_requests": [{"name": name, "args": args}], "review_configs": []})


def test_search_matches_id_preview_tools_arguments_and_questions(stores: StoreFactory) -> None:
    store = stores()
    run(create(store, "t-sql", status="interrupted", preview="Delete the old orders",
               pending=[review("i1", "execute_sql", {"query": "DELETE FROM Orders"})]))
    run(create(store, "t-mail", status="interrupted", preview="Write to the customer",
               at=T0 + timedelta(seconds=1),
               pending=[review("i2", "send_email", {"to": "Ann@Example.com"})]))
    run(create(store, "t-ask", status="interrupted", preview="Refund", at=T0 + timedelta(seconds=2),
               pending=[Interrupt(id="q", kind="input", value="Which amount, Ünal?",
                                  created_at=T0)]))
    run(create(store, "t-done", status="completed", preview="delete everything",
               at=T0 + timedelta(seconds=3)))

    def ids(**kw: object) -> list[str]:
        return [t.thread_id for t in run(store.list_threads(**kw))]  # type: ignore[arg-type]

    assert ids(search="DELETE") == ["t-done", "t-sql"]
    assert ids(status="interrupted", search="delete") == ["t-sql"]
    assert ids(search="execute_sql") == ["t-sql"]
    assert ids(search="ann@example") == ["t-mail"]
    assert ids(search="ünal") == ["t-ask"]
    assert ids(search="t-mail") == ["t-mail"]
    assert ids(search="100%_") == []
    assert ids(search="  ") == ["t-done", "t-ask", "t-mail", "t-sql"]
    assert run(store.count_threads()) == 4
    assert run(store.count_threads(status="interrupted")) == 3
    assert run(store.count_threads(status="interrupted", search="delete")) == 1
    assert run(store.count_threads(search="nothing like this")) == 0


def test_search_pages_with_the_cursor(stores: StoreFactory) -> None:
    store = stores()
    for i in range(7):
        run(create(store, f"t{i}", status="interrupted", preview=f"job {i % 2}",
                   at=T0 + timedelta(seconds=i // 3)))
    first = run(store.list_threads(status="interrupted", search="job 0", limit=2))
    last = first[-1]
    rest = run(store.list_threads(status="interrupted", search="job 0", limit=5,
                                  before=last.updated_at, before_id=last.thread_id))
    assert [t.thread_id for t in first + rest] == ["t6", "t4", "t2", "t0"]


def test_search_text_is_bounded_and_lower_case() -> None:
    t = thread("T", 1, preview="A" * 5000)
    text = search_text(t)
    assert text.startswith("t a") and len(text) <= 600

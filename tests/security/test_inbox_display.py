"""The web inbox shows what runs: bidi, tag, zero-width and newline-padded arguments (and a
mixed-script look-alike) render visibly different from the harmless text they imitate, and
carry a warning, in the field view, the JSON view, the list row and the description. Checked in
headless Chromium on the page's visible text (innerText) and on screenshots; the inbox's rules
(display.js) are also run on many texts and must give exactly what interlock.display gives."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright import sync_api as playwright_api
from playwright.sync_api import Browser, Locator, Page, expect

from interlock import Agent, HumanInTheLoop, InterruptOn, ScriptedModel, SqliteCheckpointer, display
from server.live import CHROMIUM_ARGS, LiveServer, chromium_path, watched_page
from server.server_agents import TOOLS, script

from .test_display_policy import DANGEROUS

pytestmark = pytest.mark.browser

HARMLESS = "SELECT * FROM accounts WHERE id = 1"
TAGGED = HARMLESS + "".join(chr(0xE0000 + ord(c)) for c in "; DROP TABLE accounts")
ATTACKS = {
    "bidi": HARMLESS + " \u2067OR 1=1 --\u2069 AND owner = 'me'",
    "tag": TAGGED,
    "zero-width": HARMLESS.replace("accounts", "acc\u200bounts\u200d\u2060"),
    "padding": HARMLESS + "\n" * 80 + "; DROP TABLE accounts",
}
WARNING = {  # counted in the arguments and in the description, which repeats them
    "bidi": "4 bidi controls (U+2067, U+2069)",
    "tag": "42 tag characters (U+E003B, U+E0020, U+E0044)",
    "zero-width": "6 zero-width characters (U+200B, U+200D, U+2060)",
    "padding": "Padding: 158 blank lines folded",
}


def make_agent(path: Path) -> Agent:
    describe = InterruptOn(description=lambda call, turn: f"The agent wants to run:\n"
                           f"{call.args.get('query', '')}\n(reporting job)")
    return Agent(model=ScriptedModel(script), tools=TOOLS, checkpointer=SqliteCheckpointer(path),
                 middleware=[HumanInTheLoop(interrupt_on={"execute_sql": describe,
                                                          "write_file": True})])


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server = LiveServer(make_agent(tmp_path_factory.mktemp("display") / "inbox.db"))
    for name, query in {"harmless": HARMLESS, **ATTACKS}.items():
        r = httpx.post(f"{server.url}/api/threads", params={"wait": "true"}, timeout=30,
                       json={"message": f"sql {query}", "thread_id": f"attack-{name}"})
        assert r.status_code == 200, r.text
    r = httpx.post(f"{server.url}/api/threads", params={"wait": "true"}, timeout=30,
                   json={"message": "write notes.txt pay https://pаypal.com/login now",
                         "thread_id": "attack-mixed"})
    assert r.status_code == 200, r.text
    yield server
    server.stop()


@pytest.fixture
def page(browser: Browser, live: LiveServer) -> Iterator[Page]:
    with watched_page(browser) as pg:
        pg.goto(f"{live.url}/")
        expect(pg.locator("#list-count")).to_contain_text("pending")
        yield pg


def open_thread(page: Page, thread_id: str) -> Locator:
    page.locator(f'.row[data-thread-id="{thread_id}"]').click()
    expect(page.locator(".thread-id")).to_have_text(thread_id)
    return page.locator('.card[data-tool="execute_sql"]')


def as_raw(el: Locator, text: str) -> bytes:
    """A screenshot of ``el`` after its content is replaced by ``text`` as a plain text node:
    what an inbox that inserts text as it is would show."""
    el.evaluate("(el, text) => { el.textContent = text; }", text)
    return el.screenshot()


@pytest.mark.parametrize("kind", list(ATTACKS))
def test_attack_is_visible_in_field_view_json_view_and_description(page: Page, kind: str) -> None:
    value = ATTACKS[kind]
    card = open_thread(page, f"attack-{kind}")
    warning = card.locator(".display-warning")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text(WARNING[kind])

    # field view: the visible text is the policy's rendering, which differs from the value
    field = card.locator(".argv dd pre")
    shown = field.inner_text()
    assert shown == display.visible(value)
    assert shown != value and shown != HARMLESS
    if kind == "padding":  # the dangerous tail is on screen, not pushed out of the box
        tail = field.get_by_text("; DROP TABLE accounts")
        expect(tail).to_be_in_viewport()
        assert field.locator(".esc.fold").inner_text() == "⟨79 blank lines⟩"
    else:
        assert field.locator(".esc").count() >= 1
    ours = field.screenshot()

    # description (the policy's description repeats the query)
    desc = card.locator("pre.desc")
    assert desc.inner_text() == display.visible(f"The agent wants to run:\n{value}\n(reporting job)")

    # JSON view
    card.get_by_role("button", name="Show JSON").click()
    json_box = card.locator(".json-view pre")
    expect(json_box).to_be_visible()
    assert json_box.inner_text() == display.visible(
        json.dumps({"query": value}, ensure_ascii=False, indent=2))
    if kind != "padding":
        assert json_box.locator(".esc").count() >= 1
    card.get_by_role("button", name="Show fields").click()

    # screenshots: ours differs from the harmless text; printed raw, a tag or zero-width
    # attack is pixel for pixel the harmless text (so the comparison can tell)
    harmless_raw = as_raw(field, HARMLESS)
    attack_raw = as_raw(field, value)
    assert ours != harmless_raw
    assert ours != attack_raw
    if kind in ("tag", "zero-width"):
        assert attack_raw == harmless_raw


@pytest.mark.parametrize("kind", list(ATTACKS))
def test_attack_is_visible_in_the_list_row(page: Page, kind: str) -> None:
    row = page.locator(f'.row[data-thread-id="attack-{kind}"]')
    harmless = page.locator('.row[data-thread-id="attack-harmless"]')
    expect(row.locator(".badge.display-warn")).to_be_visible()
    expect(harmless.locator(".badge.display-warn")).to_have_count(0)
    assert WARNING[kind] in (row.locator(".badge.display-warn").get_attribute("title") or "")
    # the row shows the arguments as `name: value` (args_summary), the text as it is
    preview = f"query: {value_of(kind)}"
    preview = preview if len(preview) <= 160 else preview[:159] + "…"
    args = row.locator(".row-args")
    assert args.inner_text() == display.one_line(preview, 400)
    assert args.inner_text() != harmless.locator(".row-args").inner_text()
    if kind != "padding":  # hidden characters (and line breaks) show as escapes
        assert args.locator(".esc").count() >= 1
    assert args.screenshot() != harmless.locator(".row-args").screenshot()


def value_of(kind: str) -> str:
    return ATTACKS[kind]


def test_mixed_script_look_alike_is_flagged(page: Page) -> None:
    row = page.locator('.row[data-thread-id="attack-mixed"]')
    expect(row.locator(".badge.display-warn")).to_be_visible()
    row.click()
    card = page.locator('.card[data-tool="write_file"]')
    expect(card.locator(".display-warning")).to_contain_text(
        "Mixed scripts in one word (look-alike letters?): pаypal (Latin + Cyrillic)")


def test_long_text_says_how_much_is_hidden_and_expands(page: Page) -> None:
    text = "\n".join(f"line {i}" for i in range(1, 61))
    out = page.evaluate("""async (text) => {
      const d = await import("./static/display.js");
      const el = d.textEl(text);
      document.body.append(el);
      const before = { text: el.querySelector("pre").innerText, note: el.querySelector(".clip-note").innerText };
      el.querySelector(".show-all").click();
      return { before, after: el.querySelector("pre").innerText, notes: el.querySelectorAll(".clip-note").length };
    }""", text)
    assert out["before"]["text"] == "\n".join(f"line {i}" for i in range(1, 15))
    assert out["before"]["note"].startswith("⋯ 46 more lines, ")
    assert "more characters hidden" in out["before"]["note"]
    assert out["after"] == text and out["notes"] == 0


POOL = [*DANGEROUS, "a", "b", " ", "x y", "é", "ß", "Ω", "ж", "調", "ア", "한", "ㄅ", "😀", "❤",
        "ǅ", "٣", "א", "ا", "\u0301", "pаypal", "Gооgle", "API调用"]


def corpus(n: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(POOL) for _ in range(rnd.randint(0, 14))) for _ in range(n)]


def test_inbox_rules_equal_the_python_policy(page: Page) -> None:
    texts = [*corpus(400), "", "a" * 500, "\n" * 9, "x\t \n", "❤\ufe0f\u200d"]
    js: list[dict[str, Any]] = page.evaluate("""async (texts) => {
      const d = await import("./static/display.js");
      return texts.map((t) => ({ visible: d.visible(t), line: d.oneLine(t), cut: d.oneLine(t, 30),
        warnings: d.warnings(d.inspect([t])), mixed: d.mixedScriptWords(t) }));
    }""", texts)
    for text, got in zip(texts, js, strict=True):
        want = {"visible": display.visible(text), "line": display.one_line(text),
                "cut": display.one_line(text, 30),
                "warnings": display.warnings(display.inspect([text])),
                "mixed": [[w, s] for w, s in display.mixed_script_words(text)]}
        assert got == want, text

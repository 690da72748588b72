"""Configuration of the adapters: the ``"openai:NAME"`` / ``"anthropic:NAME"`` shorthand,
keys and base URLs from the environment, SDK settings, missing extras and keys, request
options, and using one adapter from several event loops."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from interlock import (
    Agent,
    AnthropicChat,
    ConfigurationError,
    MissingDependency,
    ModelError,
    OpenAIChat,
    UserMessage,
)

from .fake_servers import Call, FakeAnthropic, FakeOpenAI, FakeProvider, text, tools
from .helpers import USER_TEXT, Ops, make_agent, make_model


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
                "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_PROFILE",
                "ANTHROPIC_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    # no SDK profile files either
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))


def test_openai_shorthand_reads_key_and_url_from_environment(
    openai_fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, no_credentials: None,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_fake.url)
    openai_fake.script(text("你好！"))
    agent = Agent(model="openai:qwen2.5:7b-instruct", tools=Ops().tools)
    assert isinstance(agent.model, OpenAIChat)
    assert agent.invoke("你好", thread_id="t").output == "你好！"
    [req] = openai_fake.requests
    assert req.body["model"] == "qwen2.5:7b-instruct"  # everything after the first ':'
    assert req.headers["authorization"] == "Bearer sk-from-env"
    assert openai_fake.problems == []


def test_anthropic_shorthand_reads_key_and_url_from_environment(
    anthropic_fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, no_credentials: None,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_fake.url)
    anthropic_fake.script(text("你好！"))
    agent = Agent(model="anthropic:claude-haiku-4-5", tools=Ops().tools)
    assert isinstance(agent.model, AnthropicChat)
    assert agent.invoke("你好", thread_id="t").output == "你好！"
    [req] = anthropic_fake.requests
    assert req.body["model"] == "claude-haiku-4-5"
    assert "sk-ant-from-env" in (req.headers.get("x-api-key", "")
                                 + req.headers.get("authorization", ""))
    assert anthropic_fake.problems == []


def test_arguments_override_environment(
    openai_fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, no_credentials: None,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    openai_fake.script(text("ok"))
    model = OpenAIChat("m", api_key="sk-arg", base_url=openai_fake.url)
    asyncio.run(model.generate([UserMessage(content="hi")], []))
    assert openai_fake.requests[0].headers["authorization"] == "Bearer sk-arg"


@pytest.mark.parametrize(("module", "name", "extra"), [
    ("openai", "openai:gpt-4.1-mini", "openai"),
    ("anthropic", "anthropic:claude-sonnet-4-6", "anthropic"),
])
def test_missing_sdk_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, name: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(MissingDependency) as info:
        Agent(model=name)
    assert f"pip install -e '.[{extra}]' in your interlock checkout" in str(info.value)
    assert info.value.extra == extra
    cls = OpenAIChat if module == "openai" else AnthropicChat
    with pytest.raises(MissingDependency, match=rf"pip install -e '\.\[{extra}\]'"):
        cls("x", api_key="k")


def test_missing_openai_key_is_a_configuration_error(no_credentials: None) -> None:
    with pytest.raises(ConfigurationError) as info:
        Agent(model="openai:gpt-4.1-mini")
    assert "OPENAI_API_KEY" in str(info.value)
    assert "api_key=" in str(info.value)


def test_missing_anthropic_key_is_reported_at_the_first_call(
    anthropic_fake: FakeAnthropic, no_credentials: None, tmp_path: Path
) -> None:
    agent = make_agent(AnthropicChat("claude-sonnet-4-6", base_url=anthropic_fake.url),
                       tmp_path, Ops())
    with pytest.raises(ModelError, match="ANTHROPIC_API_KEY"):
        agent.invoke(USER_TEXT, thread_id="t")
    assert anthropic_fake.requests == []
    assert agent.get_thread("t").status == "failed"


def test_unknown_provider_and_empty_name() -> None:
    with pytest.raises(ConfigurationError, match="unknown provider 'gemini'"):
        Agent(model="gemini:pro")
    with pytest.raises(ConfigurationError, match="openai:MODEL_NAME"):
        Agent(model="openai:")


def test_sdk_settings_are_exposed_and_defaults_kept(no_credentials: None) -> None:
    o = OpenAIChat("gpt-4.1-mini", api_key="k")
    a = AnthropicChat("claude-sonnet-4-6", api_key="k")
    # SDK defaults when not given
    import anthropic
    import openai

    assert o.max_retries == openai.DEFAULT_MAX_RETRIES
    assert a.max_retries == anthropic.DEFAULT_MAX_RETRIES
    assert o.timeout == openai.DEFAULT_TIMEOUT
    assert o.base_url.startswith("https://api.openai.com")
    assert a.base_url.startswith("https://api.anthropic.com")
    # given values reach the SDK clients
    o = OpenAIChat("gpt-4.1-mini", api_key="k", timeout=12.5, max_retries=5)
    a = AnthropicChat("claude-sonnet-4-6", api_key="k", timeout=7.0, max_retries=0,
                      max_tokens=1024)
    assert (o.client.timeout, o.client.max_retries) == (12.5, 5)
    assert (a.client.timeout, a.client.max_retries, a.max_tokens) == (7.0, 0, 1024)
    assert "gpt-4.1-mini" in repr(o)


def test_preconfigured_client_is_used(openai_fake: FakeOpenAI, anthropic_fake: FakeAnthropic
                                      ) -> None:
    import anthropic
    import openai

    oc = openai.AsyncOpenAI(api_key="sk-client", base_url=openai_fake.url, max_retries=0)
    ac = anthropic.AsyncAnthropic(api_key="sk-ant-client", base_url=anthropic_fake.url)
    o = OpenAIChat("gpt-4.1-mini", client=oc)
    a = AnthropicChat("claude-sonnet-4-6", client=ac, max_retries=3)
    assert o.client is oc
    assert a.max_retries == 3 and ac.max_retries == 2  # a copy with the override
    openai_fake.script(text("o"))
    anthropic_fake.script(text("a"))

    async def go() -> None:
        assert (await o.generate([UserMessage(content="hi")], [])).content == "o"
        assert (await a.generate([UserMessage(content="hi")], [])).content == "a"
        # A client passed in is its owner's to close, in the loop its connections belong to.
        await oc.close()
        await ac.close()

    asyncio.run(go())
    assert openai_fake.requests[0].headers["authorization"] == "Bearer sk-client"
    assert "sk-ant-client" in str(anthropic_fake.requests[0].headers)


def test_request_options_are_sent(openai_fake: FakeOpenAI, anthropic_fake: FakeAnthropic
                                  ) -> None:
    openai_fake.script(text("o"))
    anthropic_fake.script(text("a"))
    o = make_model(openai_fake, temperature=0.2, parallel_tool_calls=True,
                   extra_body={"top_k": 20})
    a = make_model(anthropic_fake, max_tokens=512, metadata={"user_id": "u-1"},
                   extra_body={"temperature": 0.3})

    async def go() -> None:
        await o.generate([UserMessage(content="hi")], Ops().tools)
        await a.generate([UserMessage(content="hi")], [])

    asyncio.run(go())
    ob, ab = openai_fake.bodies[0], anthropic_fake.bodies[0]
    assert (ob["temperature"], ob["parallel_tool_calls"], ob["top_k"]) == (0.2, True, 20)
    assert (ab["temperature"], ab["max_tokens"], ab["metadata"]) == (0.3, 512,
                                                                      {"user_id": "u-1"})
    assert "tools" not in ab  # no tools: the parameter is left out


@pytest.mark.parametrize("option", ["messages", "tools", "stream"])
def test_reserved_request_options_are_refused(option: str) -> None:
    with pytest.raises(ConfigurationError, match=option):
        OpenAIChat("m", api_key="k", **{option: 1})
    with pytest.raises(ConfigurationError, match=option):
        AnthropicChat("m", api_key="k", **{option: 1})
    with pytest.raises(ConfigurationError, match="system_prompt"):
        AnthropicChat("m", api_key="k", system="x")
    with pytest.raises(ConfigurationError, match="max_tokens"):
        AnthropicChat("m", api_key="k", max_tokens=0)


def test_unknown_request_options_are_refused_with_extra_body_hint() -> None:
    with pytest.raises(ConfigurationError, match=r"'temprature'.*extra_body"):
        OpenAIChat("m", api_key="k", temprature=0.1)
    with pytest.raises(ConfigurationError, match=r"'top_k_typo'.*extra_body"):
        AnthropicChat("m", api_key="k", top_k_typo=3)


def test_pause_and_resume_in_separate_event_loops(
    openai_fake: FakeOpenAI, anthropic_fake: FakeAnthropic, tmp_path: Path
) -> None:
    """``asyncio.run(agent.ainvoke(...))`` then later ``asyncio.run(agent.aresume(...))``:
    the adapter must not reuse connections that belong to the first (closed) loop."""
    for fake in (openai_fake, anthropic_fake):
        fake.script(tools(Call("call_1", "execute_sql", {"query": "SELECT 1"})), text("完成"),
                    text("再来一次"))
        agent = make_agent(make_model(fake), tmp_path / fake.provider, Ops())
        (tmp_path / fake.provider).mkdir()
        first = asyncio.run(agent.ainvoke(USER_TEXT, thread_id="t"))
        assert first.interrupted
        done = asyncio.run(agent.aresume("t", [{"type": "approve"}]))
        assert done.output == "完成"
        again = asyncio.run(agent.ainvoke("再来", thread_id="t"))
        assert again.output == "再来一次"
        assert len(fake.requests) == 3
        assert fake.problems == []


def test_aclose_closes_and_later_calls_reconnect(fake: FakeProvider) -> None:
    fake.script(text("一"), text("二"))
    model = make_model(fake)

    async def go() -> list[str]:
        first = await model.generate([UserMessage(content="x")], [])
        await model.aclose()  # type: ignore[attr-defined]
        second = await model.generate([UserMessage(content="x")], [])
        await model.aclose()  # type: ignore[attr-defined]
        return [first.content, second.content]

    assert asyncio.run(go()) == ["一", "二"]
    assert len(fake.requests) == 2


def test_a_client_made_for_an_event_loop_is_closed_before_that_loop_ends(
        fake: FakeProvider) -> None:
    """The sync API (and ``asyncio.run`` per call) gives each call a loop of its own. The
    SDK client the adapter made for a loop is closed while that loop still runs: once the
    loop is gone, nothing of it is left to close from another loop ("Event loop is closed"
    in a callback of whatever loop runs when the client is collected)."""
    import gc

    gc.collect()  # what earlier tests left is not this test's to judge
    fake.script(text("一"), text("二"))
    models = [make_model(fake)]
    for _ in range(2):
        asyncio.run(models[0].generate([UserMessage(content="x")], []))
    problems: list[str] = []

    async def later() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda _loop, context: problems.append(str(context.get("exception")
                                                       or context["message"])))
        models.clear()  # the adapter, and the clients it made, are collected in this loop
        for _ in range(3):
            gc.collect()
            await asyncio.sleep(0.05)

    asyncio.run(later())
    gc.collect()
    assert problems == []
    assert len(fake.requests) == 2

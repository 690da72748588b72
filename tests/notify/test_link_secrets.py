"""E-mail decision-link tokens never reach a log: a real ``interlock serve`` process (uvicorn's
access log on, ``--log-level info``) mails a link; a mail scanner fetches it, the reviewer's
page reads it and decides, and an old-style link (token in the path) is opened too. The
process's whole log output is then searched for the token."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from server.conftest import ALICE, TOKENS, bearer
from server.live import ServeProcess

from .fakes import smtp_server
from .test_email import LINK_SECRET, PUBLIC, LinkPage, body_of, link_token

pytestmark = pytest.mark.slow


def test_link_tokens_are_in_no_log_line(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    with smtp_server() as box:
        notify = tmp_path / "notify.toml"
        notify.write_text(
            f'public_url = "{PUBLIC}"\n'
            f'[email]\nhost = "127.0.0.1"\nport = {box.port}\nfrom = "interlock@example.com"\n'
            f'link_secret = "{LINK_SECRET}"\n'
            f'[dispatch]\npoll_interval = 0.05\nbackoff = 0.05\n'
            f'[[reviewers]]\nid = "alice"\nemail = "alice@example.com"\n')
        proc = ServeProcess("serve", f"sqlite:///{tmp_path / 'db.sqlite'}", tokens,
                            tmp_path / "exec.log",
                            extra_args=["--notify", str(notify), "--expiry-interval", "0"])
        try:
            started = httpx.post(f"{proc.url}/api/threads", params={"wait": "true"},
                                 headers=bearer(ALICE), timeout=30,
                                 json={"message": "drop users", "thread_id": "t-log"})
            assert started.status_code == 200 and started.json()["status"] == "interrupted"
            (msg,) = box.wait(1, timeout=30)
            text = body_of(msg)
            token = link_token(text)
            assert len(token) > 40
            (url,) = [w for w in text.split() if w.startswith(f"{PUBLIC}/notify/email")]

            # a mail scanner fetches the link as it is: the fragment is not sent
            scanned = httpx.get(proc.url + url[len(PUBLIC):])
            assert scanned.status_code == 200 and token not in scanned.text
            # a link in the old form (token in the path) still opens the same page
            legacy = httpx.get(f"{proc.url}/notify/email/{token}")
            assert legacy.status_code == 200 and "data-legacy" in legacy.text

            link = LinkPage(proc.url, token)
            assert link.open().json()["tool"] == "drop_table"
            done = link.decide("approve")
            assert done.status_code == 200, done.text
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                thread = httpx.get(f"{proc.url}/api/threads/t-log", headers=bearer(ALICE))
                if thread.json()["status"] == "completed":
                    break
                time.sleep(0.1)
            assert thread.json()["status"] == "completed"
            assert [json.loads(x)["name"] for x in
                    (tmp_path / "exec.log").read_text().splitlines()] == ["drop_table"]
        finally:
            assert proc.stop() == 0
    log = "".join(proc.lines)
    # the access log was on and saw every request of the flow ...
    assert '"GET /notify/email HTTP/1.1" 200' in log
    assert '"GET /notify/email/<redacted> HTTP/1.1" 200' in log
    assert '"POST /notify/email/view HTTP/1.1" 200' in log
    assert '"POST /notify/email/decide HTTP/1.1" 200' in log
    # ... and no line holds the token, nor any long piece of it
    assert token not in log
    assert not [line for line in proc.lines if token[:24] in line or token[-24:] in line]

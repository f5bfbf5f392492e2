"""`sp oauth connect`'s loopback listener on a real socket: it binds 127.0.0.1 at a port the
system picks, takes only /callback, answers anything else 404 without stopping, refuses a
repeated parameter, never logs the query, and gives up at its deadline."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from safeport.action_gateway.oauth.errors import OAuthRefused
from safeport.errors import UsageError
from safeport.gateway_client.loopback_callback import LoopbackCallback


def _get_later(url: str, *paths: str) -> threading.Thread:
    def run() -> None:
        with httpx.Client(timeout=5) as client:
            for path in paths:
                client.get(url + path)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_the_callback_query_is_taken_and_other_paths_are_404(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with LoopbackCallback() as listener:
        uri = listener.redirect_uri
        assert uri.startswith("http://127.0.0.1:") and uri.endswith("/callback")
        base = uri.removesuffix("/callback")
        sender = _get_later(base, "/favicon.ico", "/callback/x", "/callback?code=c0de&state=s1")
        query = listener.wait(time.monotonic() + 20)
        sender.join(timeout=20)
    assert query == {"code": "c0de", "state": "s1"}
    captured = capsys.readouterr()
    assert "c0de" not in captured.out + captured.err


def test_a_parameter_given_twice_is_refused() -> None:
    with LoopbackCallback() as listener:
        sender = _get_later(listener.redirect_uri, "?code=a&code=b&state=s")
        with pytest.raises(OAuthRefused):
            listener.wait(time.monotonic() + 20)
        sender.join(timeout=20)


def test_no_answer_by_the_deadline_ends_the_wait() -> None:
    with LoopbackCallback() as listener:
        started = time.monotonic()
        with pytest.raises(UsageError, match="in time"):
            listener.wait(started + 0.3)
        assert time.monotonic() - started < 10

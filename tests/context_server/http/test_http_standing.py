"""Reusing the gateway's "this token stands": only while the gateway's revocation notice holds
the value read before the question, for at most MAX_AGE_S, never past the token's expiry; a
notice that is missing or not the gateway's own means asking every time. The notice is the
gateway's real writer (``RevocationNotice``) on a real file; the gateway's answers are counted."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from safeport.action_gateway.remote_clients.revocation_notice import RevocationNotice
from safeport.context_server.http.standing import (
    MAX_AGE_S,
    MAX_REMEMBERED,
    StandingChecks,
    read_notice,
)
from safeport.shared.schemas.oauth_wire import AccessClaims, OAuthCheckResult

NOW = 1_900_000_000.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def claims(
    jti: str = "token-0001", client: str = "sp-client", exp: float = NOW + 300
) -> AccessClaims:
    return AccessClaims(
        iss="https://tunnel.example",
        aud="https://tunnel.example/mcp",
        sub=client,
        exp=int(exp),
        iat=int(NOW),
        jti=jti,
        sp_roots=["proj~0123456789ab"],
        sp_profile="reader",
        sp_client="Example client",
    )


class Gateway:
    """Answers oauth_check from a set of revoked clients, counting the questions; ``during``
    runs while a question is in flight (a revocation racing it)."""

    def __init__(self, notice: RevocationNotice) -> None:
        self.notice = notice
        self.revoked: set[str] = set()
        self.asked = 0
        self.during: list[str] = []

    def revoke(self, client: str) -> None:
        self.revoked.add(client)
        self.notice.publish()  # as the gateway does, before it answers the revoke

    async def __call__(self, client: str, jti: str) -> OAuthCheckResult:
        self.asked += 1
        answer = OAuthCheckResult(active=client not in self.revoked)
        for racing in self.during:
            self.revoke(racing)
        self.during.clear()
        return answer


class Clocks:
    def __init__(self) -> None:
        self.mono = 0.0
        self.wall = NOW


def standing(tmp_path: Path, uid: int | None = None) -> tuple[StandingChecks, Gateway, Clocks]:
    notice = RevocationNotice(tmp_path / "revocations")
    notice.publish()
    gateway, clocks = Gateway(notice), Clocks()
    checks = StandingChecks(
        gateway,
        notice.path,
        os.geteuid() if uid is None else uid,
        clock=lambda: clocks.mono,
        wall=lambda: clocks.wall,
    )
    return checks, gateway, clocks


@pytest.mark.anyio
async def test_a_standing_answer_is_reused_until_the_notice_changes(tmp_path: Path) -> None:
    checks, gateway, clocks = standing(tmp_path)
    for _ in range(20):
        assert (await checks.check(claims())).active
        clocks.mono += 0.05
    assert gateway.asked == 1  # one question for twenty requests
    gateway.revoke("sp-client")
    answer = await checks.check(claims())
    assert not answer.active and gateway.asked == 2  # the very next request asked


@pytest.mark.anyio
async def test_a_revocation_racing_the_question_is_seen_by_the_next_request(
    tmp_path: Path,
) -> None:
    """The gateway said "stands", then (before the answer arrived) the client was revoked: the
    notice read before the question no longer matches, so the answer is not reused."""
    checks, gateway, _ = standing(tmp_path)
    gateway.during.append("sp-client")
    assert (await checks.check(claims())).active  # answered before the revocation landed
    assert not (await checks.check(claims())).active
    assert gateway.asked == 2


@pytest.mark.anyio
async def test_a_change_for_one_client_makes_every_client_ask_again(tmp_path: Path) -> None:
    checks, gateway, _ = standing(tmp_path)
    assert (await checks.check(claims(client="sp-a", jti="a"))).active
    assert (await checks.check(claims(client="sp-b", jti="b"))).active
    gateway.revoke("sp-a")
    assert not (await checks.check(claims(client="sp-a", jti="a"))).active
    assert (await checks.check(claims(client="sp-b", jti="b"))).active
    assert gateway.asked == 4


@pytest.mark.anyio
async def test_an_answer_is_reused_for_at_most_max_age_and_never_past_expiry(
    tmp_path: Path,
) -> None:
    checks, gateway, clocks = standing(tmp_path)
    await checks.check(claims())
    clocks.mono += MAX_AGE_S - 0.01
    await checks.check(claims())
    assert gateway.asked == 1
    clocks.mono += 0.02
    await checks.check(claims())
    assert gateway.asked == 2  # too old: asked (and so "last used" stays current)
    short = claims(jti="short", exp=NOW + 1)
    await checks.check(short)
    clocks.wall = NOW + 1  # its expiry: the gateway's word on it, not a remembered one
    await checks.check(short)
    assert gateway.asked == 4


@pytest.mark.anyio
async def test_does_not_stand_is_never_reused(tmp_path: Path) -> None:
    checks, gateway, _ = standing(tmp_path)
    gateway.revoked.add("sp-client")  # without a new notice: the answer alone must not stick
    assert not (await checks.check(claims())).active
    gateway.revoked.clear()
    assert (await checks.check(claims())).active
    assert gateway.asked == 2


def _missing(path: Path) -> None:
    path.unlink()


def _group_writable(path: Path) -> None:
    path.chmod(0o664)


def _symlink(path: Path) -> None:
    real = path.with_name("elsewhere")
    path.rename(real)
    path.symlink_to(real)


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)  # opened for reading with nobody writing: must not block


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _too_big(path: Path) -> None:
    path.write_text("x" * 4096)


def _too_short(path: Path) -> None:
    path.write_text("1\n")


NOT_A_NOTICE = {
    "missing": _missing,
    "group-writable": _group_writable,
    "a symbolic link": _symlink,
    "a FIFO": _fifo,
    "a folder": _folder,
    "too big": _too_big,
    "too short": _too_short,
}


@pytest.mark.anyio
@pytest.mark.parametrize("spoil", list(NOT_A_NOTICE))
async def test_without_a_sound_notice_every_request_asks(tmp_path: Path, spoil: str) -> None:
    checks, gateway, _ = standing(tmp_path)
    NOT_A_NOTICE[spoil](tmp_path / "revocations")
    started = time.monotonic()
    for _ in range(5):
        assert (await checks.check(claims())).active
    assert gateway.asked == 5
    assert time.monotonic() - started < 5  # a FIFO did not hold it


@pytest.mark.anyio
async def test_a_notice_owned_by_someone_else_is_no_notice(tmp_path: Path) -> None:
    """In dedicated-account mode only the gateway's account can own it; a file of any other
    uid (planted by whoever could) does not count."""
    checks, gateway, _ = standing(tmp_path, uid=os.geteuid() + 1)
    for _ in range(3):
        await checks.check(claims())
    assert gateway.asked == 3
    assert read_notice(tmp_path / "revocations", os.geteuid() + 1) is None
    assert read_notice(tmp_path / "revocations", os.geteuid()) is not None


@pytest.mark.anyio
async def test_many_live_tokens_are_bounded_in_memory(tmp_path: Path) -> None:
    checks, gateway, _ = standing(tmp_path)
    for n in range(MAX_REMEMBERED + 10):
        await checks.check(claims(jti=f"t{n}"))
    assert len(checks._standing) <= MAX_REMEMBERED
    assert gateway.asked == MAX_REMEMBERED + 10


def test_reading_the_notice_while_it_is_replaced_never_sees_a_partial_value(
    tmp_path: Path,
) -> None:
    notice = RevocationNotice(tmp_path / "revocations")
    notice.publish()
    stop = threading.Event()

    def replace() -> None:
        while not stop.is_set():
            notice.publish()

    writer = threading.Thread(target=replace)
    writer.start()
    try:
        seen = [read_notice(notice.path, os.geteuid()) for _ in range(2000)]
    finally:
        stop.set()
        writer.join()
    assert all(value is not None and len(value) == 33 for value in seen)

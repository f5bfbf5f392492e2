"""The revocation notice: replaced by every change that ends a standing access token, before the
change is answered; readable by the context server, writable only by the gateway; removed when
it cannot be replaced or when the gateway stops."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from safeport.action_gateway.remote_clients.revocation_notice import RevocationNotice
from safeport.action_gateway.remote_clients.signing_key import SigningKey
from safeport.action_gateway.remote_clients.token_ledger import (
    MAX_FAMILIES,
    Binding,
    Family,
    TokenLedger,
)

ISSUER = "https://tunnel.example.net"
SIGN = SigningKey.from_seed(bytes(32)).sign_bytes


class Clock:
    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


class Counted:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


def binding(client: str = "sp-client") -> Binding:
    return Binding(client, "Test Client", f"{ISSUER}/mcp", ISSUER, ("docs",), "reader")


def family_of(ledger: TokenLedger, client: str = "sp-client") -> tuple[Family, str]:
    """A family with one access token (``jti-<family id>``), and the code that started it."""
    code = ledger.new_code(binding(client), "https://c.example/cb", "x" * 43)
    family = ledger.redeem_code(code, lambda record: None).family
    assert family is not None
    ledger.issued(family, f"jti-{family.id}", 1_900_000_600.0)
    return family, code


def test_publishing_replaces_the_value_readably_and_withdrawing_removes_it(
    tmp_path: Path,
) -> None:
    notice = RevocationNotice(tmp_path / "revocations")
    old_umask = os.umask(0o077)  # a strict umask must not hide it from the context server
    try:
        notice.publish()
    finally:
        os.umask(old_umask)
    first = notice.path.read_bytes()
    info = notice.path.stat()
    assert stat.S_IMODE(info.st_mode) == 0o644 and len(first.strip()) == 32
    notice.publish()
    assert notice.path.read_bytes() != first
    assert [p.name for p in tmp_path.iterdir()] == ["revocations"]  # no temp file left
    notice.withdraw()
    assert not notice.path.exists()
    notice.withdraw()  # twice is fine


def test_a_rename_that_fails_leaves_no_temp_file(tmp_path: Path) -> None:
    """A real failure: something (not a file) sits where the notice goes."""
    notice = RevocationNotice(tmp_path / "revocations")
    (tmp_path / "revocations").mkdir()
    (tmp_path / "revocations" / "x").write_text("not empty")
    notice.publish()  # renaming over a non-empty folder fails, and so does removing it
    assert [p.name for p in tmp_path.iterdir()] == ["revocations"]
    (tmp_path / "revocations" / "x").unlink()
    (tmp_path / "revocations").rmdir()
    notice.publish()
    assert (tmp_path / "revocations").is_file()


def test_a_failed_replacement_removes_the_old_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fail closed: an old value left standing would let remembered answers outlive the change;
    with no notice, the context server asks on every request."""
    notice = RevocationNotice(tmp_path / "revocations")
    notice.publish()

    def no_rename(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", no_rename)
    notice.publish()
    assert list(tmp_path.iterdir()) == []


Change = Callable[[TokenLedger, Family, str], object]


def _reuse_refresh(ledger: TokenLedger, family: Family, code: str) -> object:
    first = ledger.next_refresh(family)
    assert ledger.rotate(first, lambda f: None).family is family
    ledger.next_refresh(family)
    return ledger.rotate(first, lambda f: None)  # the rotated-away token again


def _drop_oldest(ledger: TokenLedger, family: Family, code: str) -> object:
    for n in range(MAX_FAMILIES):
        family_of(ledger, f"sp-{n}")
    return ledger.access_state("sp-client", f"jti-{family.id}")


CHANGES: dict[str, Change] = {
    "client revoked": lambda ledger, family, code: ledger.revoke_client("sp-client"),
    "refresh token revoked (RFC 7009)": lambda ledger, family, code: ledger.revoke_token(
        ledger.next_refresh(family)
    ),
    "access token revoked (RFC 7009)": lambda ledger, family, code: ledger.revoke_access(
        f"jti-{family.id}"
    ),
    "refresh token reused": _reuse_refresh,
    "code replayed": lambda ledger, family, code: ledger.redeem_code(code, lambda record: None),
    "everything forgotten (a lock)": lambda ledger, family, code: ledger.forget_all(),
    "oldest family dropped": _drop_oldest,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_change_that_ends_a_standing_token_calls_ended(change: str) -> None:
    clock, ended = Clock(), Counted()
    ledger = TokenLedger(clock, SIGN, ended)
    family, code = family_of(ledger)
    jti = f"jti-{family.id}"
    assert ledger.access_state("sp-client", jti) is None and ended.calls == 0
    CHANGES[change](ledger, family, code)
    assert ledger.access_state("sp-client", jti) is not None  # the token no longer stands
    assert ended.calls >= 1


def test_ordinary_use_does_not_replace_the_notice() -> None:
    """Issuing, rotating and checking leave the notice alone: remembered answers of other
    clients stay good while one client works normally."""
    clock, ended = Clock(), Counted()
    ledger = TokenLedger(clock, SIGN, ended)
    family, _ = family_of(ledger)
    token = ledger.next_refresh(family)
    for n in range(3):
        assert ledger.rotate(token, lambda f: None).family is family
        ledger.issued(family, f"jti-{n}", clock.now + 600)
        token = ledger.next_refresh(family)
        assert ledger.access_state("sp-client", f"jti-{n}") is None
    assert ended.calls == 0

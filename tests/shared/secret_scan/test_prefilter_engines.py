"""ASCII text goes to Hyperscan where its wheel is installed, else to the automaton: the two
must wake the same anchors at the same places in the same order, whatever the text, or a file
would be judged differently on a machine without the wheel."""

from __future__ import annotations

import random
import sys
import threading

import pytest

from safeport.shared.secret_scan import prefilter
from safeport.shared.secret_scan.prefilter import LITERALS, hits
from safeport.shared.secret_scan.scanner import scan_text

ASCII_LITERALS = [literal for literal in LITERALS if literal.isascii()]


def _texts() -> list[str]:
    """Literals packed together so they overlap, share starts (``api``, ``api_key``,
    ``API_KEY``), repeat inside themselves and sit at both ends of the text."""
    chooser = random.Random(34)
    texts = [
        "api_key = apiKey + API_KEY; X-Api-Key: x-api-key\n",
        "passpasspass PASSWORD Passwd pwpw\n" * 3,
        "A" * 5000,
        "MDAwMDAwMDAwMDAw" * 40,
        "\x00t\x00o\x00k\x00e\x00n\x00 https:\\/\\/u:p@h",
        "token",
        "",
    ]
    filler = [" ", "\n", "=", ":", "_", "-", '"', "x", "Z", "9", "|", "\\"]
    for _ in range(200):
        parts = chooser.choices(ASCII_LITERALS, k=chooser.randrange(1, 12))
        glue = [chooser.choice(filler) * chooser.randrange(0, 3) for _ in parts]
        texts.append("".join(part + joint for part, joint in zip(parts, glue, strict=True)))
    return texts


def _automaton_hits(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[int, int, prefilter.Anchor]]:
    with monkeypatch.context() as patch:
        patch.setattr(prefilter, "_LITERAL_SCAN", None)
        return hits(text)


def test_hyperscan_and_the_automaton_wake_the_same_anchors_in_the_same_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if prefilter._LITERAL_SCAN is None:
        pytest.skip("no hyperscan wheel on this platform: the automaton is the only pass")
    for text in _texts():
        assert hits(text) == _automaton_hits(text, monkeypatch), text[:80]


def test_the_automaton_alone_still_finds_every_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no wheel is installed, the same secrets are withheld."""
    token = "ghp_" + "Zq8" * 12
    text = f'password = "Vx7#mQ2!kL9p"\nGITHUB_TOKEN={token}\nkeys = {{}}\n'
    with_wheel = scan_text(text)
    monkeypatch.setattr(prefilter, "_LITERAL_SCAN", None)
    assert scan_text(text) == with_wheel
    assert [text[s.start : s.end] for s in with_wheel] == ["Vx7#mQ2!kL9p", token]


def test_scans_on_several_threads_at_once_each_get_their_own_answer() -> None:
    """A scan calls back into Python at each hit, where another thread may start a scan of its
    own: each thread scans with its own scratch space, and each gets its own text's hits."""
    # Long texts full of hits, and a thread switch asked for as often as the interpreter can:
    # scans overlap in every run.
    texts = [f"api_key {number} token\n" * 4_000 for number in range(4)]
    expected = [hits(text) for text in texts]
    failures: list[BaseException] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def scan_all() -> None:
        try:
            for _ in range(2):
                for text, want in zip(texts, expected, strict=True):
                    assert hits(text) == want
        except BaseException as exc:  # reported to the test's thread below
            failures.append(exc)

    threads = [threading.Thread(target=scan_all) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join(timeout=120)
    finally:
        sys.setswitchinterval(interval)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []


def test_a_wheel_that_cannot_run_here_leaves_every_scan_to_the_automaton(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hyperscan is loaded at the first scan; a wheel this processor cannot run (an import or
    compile error) must not fail the scan, which would fail the read: the automaton answers."""
    text = "api_key = apiKey + API_KEY; password: Vx7#mQ2!kL9p\n"
    expected = _automaton_hits(text, monkeypatch)

    def cannot_run(name: str) -> object:
        raise ImportError(name)

    unloadable = prefilter._LiteralScan(prefilter._ASCII_LITERALS)
    monkeypatch.setattr("importlib.import_module", cannot_run)
    monkeypatch.setattr(prefilter, "_LITERAL_SCAN", unloadable)
    assert unloadable.find(text.encode("ascii")) is None
    assert hits(text) == expected
    assert [text[s.start : s.end] for s in scan_text(text)] == ["Vx7#mQ2!kL9p"]

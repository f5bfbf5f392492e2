"""The detector's tests draw values at random, since a generated secret is the class they stand
for. The draws come from a generator seeded by the test's own name, so every run repeats the
draws of the last. A rare draw the detector misses then fails every run, where it can be
studied, instead of one run in a few hundred. How often drawn values are missed is measured by
``benchmarks/bench_secret_scan.py`` on fresh draws each run, not by the tests."""

import base64
import random
import secrets
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _seeded_draws(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    rng = random.Random(request.node.nodeid)

    def token_bytes(size: int = 32) -> bytes:
        return rng.randbytes(size)

    def token_hex(size: int = 32) -> str:
        return rng.randbytes(size).hex()

    def token_urlsafe(size: int = 32) -> str:
        return base64.urlsafe_b64encode(rng.randbytes(size)).rstrip(b"=").decode()

    monkeypatch.setattr(secrets, "token_bytes", token_bytes)
    monkeypatch.setattr(secrets, "token_hex", token_hex)
    monkeypatch.setattr(secrets, "token_urlsafe", token_urlsafe)
    monkeypatch.setattr(secrets, "choice", rng.choice)
    monkeypatch.setattr(secrets, "randbelow", rng.randrange)
    yield

"""One request to an authority is bounded as a whole, not only per read: a real TSA endpoint
(`/trickle`) that sends its header lines a few bytes at a time, each read well within the
timeout, gets a fault within about the timeout instead of holding the stamper, and every other
authority behind it, for as long as it likes."""

from __future__ import annotations

import time

from harness.real_tsa import SLOW_S, TsaServer
from safeport.action_gateway.evidence.tsa_client import (
    TsaFault,
    TsaTarget,
    new_client,
    request_stamp,
)
from safeport.shared.schemas.config import TsaSettings


def _target(tsa: TsaServer, path: str) -> TsaTarget:
    return TsaTarget.from_settings(TsaSettings(url=tsa.url(path), ca_file=str(tsa.honest.ca_file)))


def test_an_answer_trickled_within_each_read_timeout_is_cut_at_the_whole_timeout(
    tsa: TsaServer,
) -> None:
    with new_client() as client:
        started = time.monotonic()
        try:
            request_stamp(client, _target(tsa, "/trickle"), "a note\n", 1.0)
        except TsaFault as exc:
            assert "no answer within 1 s" in str(exc)
        else:
            raise AssertionError("a trickled answer was taken for a stamp")
        assert time.monotonic() - started < SLOW_S / 2
        # The same client still stamps afterwards: the cut closed that connection only.
        stamp = request_stamp(client, _target(tsa, "/tsr"), "a note\n", 10.0)
        assert stamp.note == "a note\n"

"""The ladder's one filter step and its message cuts, over the in-process rig.

Whatever an executor hands back (fields, rows, output) is searched for the credential the
action ran with in every form the reply could carry it; and an executor's failure message is
redacted before it is cut, so the reply, the card's outcome and the journal record never end
in the first characters of the credential.
"""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import quote

import pytest

from harness.gateway import POLICY
from safeport.action_gateway.executors.interface import ActionError, HttpAction
from safeport.shared.known_secrets import secret_forms
from safeport.shared.schemas.replies import MAX_REASON_CHARS, error_reply
from safeport.shared.schemas.results import ApprovalEvent, CardOutcome
from safeport.shared.schemas.wire import HttpResult
from safeport.vault.secrets import BasicSecret, TokenSecret
from tests.action_gateway.ladder.test_ladder_rungs import Policies, Rig
from tests.vault.vault_factory import CANARY_TOKEN

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.ladder"

TOKEN = CANARY_TOKEN.decode()


class Answering(Rig):
    """The rig with an executor that answers ``fields``."""

    fields: dict[str, object]

    def __post_init__(self) -> None:
        super().__post_init__()
        self.policies = Policies(POLICY)  # no rate cap
        self.fields = {"state": "ok"}
        rig = self

        def http_request(action: HttpAction, secret: TokenSecret | BasicSecret) -> HttpResult:
            rig.events.append("executor.http")
            if rig.executor.failure is not None:
                raise rig.executor.failure
            return HttpResult(status=200, fields=dict(rig.fields))

        self.executor.http_request = http_request  # type: ignore[method-assign]


@pytest.mark.parametrize(
    "state",
    [
        base64.b64encode(CANARY_TOKEN).decode(),
        "v=" + base64.urlsafe_b64encode(b"\x01" + CANARY_TOKEN).decode(),
        CANARY_TOKEN.hex().upper(),
        TOKEN.replace("-", "\\u002d"),
        quote(TOKEN, safe=""),
        ["ok", {"nested": TOKEN}],
    ],
)
def test_a_result_holding_the_credential_encoded_is_withheld_whole(
    tmp_path: Path, state: object
) -> None:
    rig = Answering(tmp_path)
    rig.fields = {"state": state}
    refusal = rig.refused()
    assert (refusal.code, refusal.category) == ("upstream", "upstream_bad_response")
    assert "withheld" in refusal.reason
    outcome = [body for kind, body, _ in rig.journal.records if kind == "action.outcome"]
    assert outcome[-1]["status"] == "bad_response"
    assert TOKEN not in str(rig.journal.records)


def test_a_result_without_the_credential_is_served(tmp_path: Path) -> None:
    rig = Answering(tmp_path)
    rig.fields = {"state": base64.b64encode(b"an ordinary status value").decode()}
    assert rig.propose().model_dump()["fields"] == {"state": "YW4gb3JkaW5hcnkgc3RhdHVzIHZhbHVl"}


def _ends_in_a_piece(text: str) -> bool:
    return any(
        text.removesuffix("…").endswith(form[:n])
        for form in secret_forms([TOKEN])
        for n in range(1, len(form))
    )


@pytest.mark.parametrize("keep", [4, 16])
@pytest.mark.parametrize("form", ["raw", "hex", "base64"])
def test_a_failure_message_cut_inside_the_credential_leaves_no_fragment_anywhere(
    tmp_path: Path, keep: int, form: str
) -> None:
    rig = Answering(tmp_path)
    heard: list[ApprovalEvent] = []
    rig.approvals.subscribe(heard.append)
    encoded = {
        "raw": TOKEN,
        "hex": CANARY_TOKEN.hex(),
        "base64": base64.b64encode(CANARY_TOKEN).decode(),
    }[form]
    # The cut at the reply's bound lands `keep` characters into the credential.
    message = "x" * (MAX_REASON_CHARS - 1 - keep) + encoded + " (and the rest)"
    rig.executor.failure = ActionError("bad_response", message)
    refusal = rig.refused()
    outcome = [event for event in heard if isinstance(event, CardOutcome)]
    denied = rig.denials()
    reply = error_reply("r-1", refusal.code, refusal.reason).error.reason
    for text in (refusal.reason, outcome[0].detail, str(denied[0]["reason"]), reply):
        assert "x" * 100 in text  # the message is kept, only the credential is not
        assert not _ends_in_a_piece(text), text[-30:]
        assert encoded[:4] not in text


def test_a_short_failure_message_keeps_its_words_with_the_credential_redacted(
    tmp_path: Path,
) -> None:
    rig = Answering(tmp_path)
    rig.executor.failure = ActionError("bad_response", f"the service said {TOKEN} is wrong")
    assert rig.refused().reason == "the service said [REDACTED] is wrong"

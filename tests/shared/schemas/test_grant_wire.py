"""control.sock's connect messages never show a secret they carry: the passphrase, a client
secret, and the browser's callback query (it holds the authorization code) stay out of every
repr and str, of the params and of the whole request."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, SecretStr

from safeport.shared.schemas.control import OAuthFinishRequest
from safeport.shared.schemas.grant_wire import OAuthBeginParams, OAuthFinishParams

CODE = "CANARY-AUTH-CODE-d41d8cd98f"
FLOW = "f" * 32
REQUEST = {"v": 1, "id": "1", "type": "control", "op": "oauth.finish"}
REQUEST["params"] = {"flow_id": FLOW, "query": {"code": CODE, "state": "s"}}


@pytest.mark.parametrize(
    "message",
    [
        OAuthFinishParams(flow_id=FLOW, query={"code": CODE, "state": "s", "iss": "https://i"}),
        OAuthFinishParams(flow_id=FLOW, query={"state": "s", "code": CODE}),
        OAuthFinishRequest.model_validate(REQUEST),
        OAuthBeginParams(
            passphrase=SecretStr(CODE),
            name="tracker",
            device=True,
            client_secret_b64=SecretStr(CODE),
        ),
    ],
)
def test_a_connect_message_shows_no_secret_it_carries(message: BaseModel) -> None:
    for shown in (repr(message), str(message), f"{message!r:}", repr([message])):
        assert CODE not in shown


def test_the_query_is_still_sent_and_read_whole() -> None:
    params = OAuthFinishParams(flow_id=FLOW, query={"code": CODE, "state": "s"})
    assert params.query == {"code": CODE, "state": "s"}
    assert params.model_dump()["query"]["code"] == CODE  # the wire carries it
    assert OAuthFinishParams.model_validate_json(params.model_dump_json()) == params

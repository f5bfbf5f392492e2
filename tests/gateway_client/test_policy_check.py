"""check_policy reads, parses and reviews gateway.toml; with no gateway to ask, the count of
unaccepted lines is unknown rather than zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.errors import Error
from safeport.gateway_client.policy_check import check_policy, local_proposal
from safeport.shared.paths import SafeportPaths, locate
from safeport.shared.schemas.results import PolicySnapshot

_POLICY = '[credentials.api-token]\nkind = "token"\n'


def _paths(tmp_path: Path) -> SafeportPaths:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    return locate(env={"SAFEPORT_HOME": str(home)})


def test_a_missing_gateway_toml_raises_with_the_way_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(Error) as caught:
        check_policy(_paths(tmp_path))
    assert caught.value.hint == "run `sp init` to create one"


def test_a_policy_with_no_gateway_running_has_unknown_unaccepted_lines(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.gateway_config.write_text(_POLICY)
    found = check_policy(paths)
    assert found.text == _POLICY and "api-token" in found.policy.credentials
    assert found.unaccepted is None and not found.view.running


def test_the_local_proposal_is_pending_only_when_the_file_differs(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.gateway_config.write_text(_POLICY)
    digest = check_policy(paths).digest
    assert local_proposal(paths.gateway_config, _served(digest)).pending is False
    proposal = local_proposal(paths.gateway_config, _served("other"))
    assert proposal.pending is True and proposal.file_text == _POLICY


def _served(digest: str) -> PolicySnapshot:
    """What a gateway serving ``digest`` says before the human's own file is read."""
    return PolicySnapshot(
        served=digest, file=None, file_error=None, pending=False, served_text=None, file_text=None
    )

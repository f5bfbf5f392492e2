"""The OAuth end-to-end tests' rig: a real gateway on a real vault whose grant is connected
through `sp oauth connect` at the session's real authorization server (oauth_rig.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.real_oidc import OidcProvider
from tests.action_gateway.oauth.oauth_rig import RigFor, running_rigs


@pytest.fixture
def rig_for(tmp_path: Path, oidc_provider: OidcProvider) -> Iterator[RigFor]:
    with running_rigs(tmp_path, oidc_provider) as start:
        yield start

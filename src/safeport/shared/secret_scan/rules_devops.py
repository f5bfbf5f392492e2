"""Tokens of build, registry and infrastructure tools: Docker swarm, JFrog, SonarQube, Defined
Networking, WunderGraph Cosmo. (GitLab, GitHub, Docker Hub and the older formats are in
``provider_rules``.)"""

from __future__ import annotations

import re

from safeport.shared.secret_scan.checks import decoded_base64, random_enough
from safeport.shared.secret_scan.token_rule import B, E, TokenRule, rule

_REFERENCE = re.compile(rb"reftkn:[0-9]{2}:[0-9]{10}:")


def _jfrog_reference(token: str) -> bool:
    """A reference token is base64 of ``reftkn:01:<expiry>:<random>``: a version and a time,
    not words."""
    decoded = decoded_base64(token)
    return decoded is not None and _REFERENCE.match(decoded) is not None


DEVOPS_RULES: tuple[TokenRule, ...] = (
    # The token a node joins a swarm with, and the key that unlocks a locked swarm's managers.
    rule(
        "docker-swarm-token",
        "SWMTKN-1-",
        r"SWMTKN-1-[a-z0-9]{50}-[a-z0-9]{25}" + E,
        random_enough,
    ),
    rule("docker-swarm-key", "SWMKEY-1-", r"SWMKEY-1-[A-Za-z0-9+/]{43}" + E, random_enough),
    rule("jfrog-token", "AKCp", B + r"AKCp[A-Za-z0-9]{69}" + E, random_enough),
    rule(
        "jfrog-token",
        "cmVmdGtu",
        B + r"cmVmdGtu[A-Za-z0-9+/]{50,80}={0,2}(?![A-Za-z0-9+/])",
        _jfrog_reference,
    ),
    # User, project and global analysis tokens.
    rule("sonarqube-token", ("squ_", "sqp_", "sqa_"), B + r"sq[upa]_[a-f0-9]{40}" + E),
    rule(
        "defined-networking-key",
        "dnkey-",
        r"dnkey-[A-Z0-9]{26}-[A-Z0-9]{52}" + E,
        random_enough,
    ),
    rule("wundergraph-key", "cosmo_", B + r"cosmo_[a-f0-9]{32}" + E, random_enough),
)

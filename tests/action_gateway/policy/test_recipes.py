"""The GitHub and GitLab recipes in docs/guides/recipes.md are policies `sp policy check` accepts,
whose operations build the requests those APIs expect from ordinary arguments."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.gateway import REPO
from safeport.action_gateway.executors.prepare import prepare_http
from safeport.action_gateway.policy.arguments import validate_args
from safeport.shared.schemas.config import parse_gateway_policy
from tests.cli.test_help_and_errors import run

RECIPES = REPO / "docs" / "guides" / "recipes.md"
BLOCK = re.compile(r"^```toml\n(.*?)^```", re.S | re.M)

# Ordinary values an agent would send, by param name.
ARGS: dict[str, str | int] = {
    "owner": "your-org", "repo": "safeport", "number": 7, "count": 10, "iid": 3,
    "pipeline": 42, "project": "your-group/your-project", "title": "Flaky test on main",
    "body": "Seen twice today; logs attached.", "description": "Steps: run the suite twice.",
}  # fmt: skip

# What each operation sends: the method and the URL the API documents.
EXPECTED = {
    ("github", "get_issue"): "GET https://api.github.com/repos/your-org/safeport/issues/7",
    ("github", "list_open_pulls"): (
        "GET https://api.github.com/repos/your-org/safeport/pulls?state=open&per_page=10"
    ),
    ("github", "create_issue"): "POST https://api.github.com/repos/your-org/safeport/issues",
    ("github", "comment_on_issue"): (
        "POST https://api.github.com/repos/your-org/safeport/issues/7/comments"
    ),
    ("gitlab", "get_merge_request"): (
        "GET https://gitlab.com/api/v4/projects/your-group%2Fyour-project/merge_requests/3"
    ),
    ("gitlab", "get_pipeline"): (
        "GET https://gitlab.com/api/v4/projects/your-group%2Fyour-project/pipelines/42"
    ),
    ("gitlab", "create_issue"): (
        "POST https://gitlab.com/api/v4/projects/your-group%2Fyour-project/issues"
    ),
    ("gitlab", "comment_on_merge_request"): (
        "POST https://gitlab.com/api/v4/projects/your-group%2Fyour-project/merge_requests/3/notes"
    ),
}


def recipes() -> list[str]:
    return BLOCK.findall(RECIPES.read_text())


def test_the_page_holds_a_github_and_a_gitlab_recipe() -> None:
    blocks = recipes()
    assert len(blocks) == 2
    assert "[http.services.github]" in blocks[0] and "[http.services.gitlab]" in blocks[1]


@pytest.mark.parametrize("index", [0, 1], ids=["github", "gitlab"])
def test_each_recipe_passes_sp_policy_check(tmp_path: Path, index: int) -> None:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "gateway.toml").write_text(recipes()[index])
    done = run(home, "policy", "check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "approved once per session" in done.stdout and "approved per call" in done.stdout


@pytest.mark.parametrize("index", [0, 1], ids=["github", "gitlab"])
def test_each_recipe_operation_builds_the_request_its_api_documents(index: int) -> None:
    policy, _ = parse_gateway_policy(recipes()[index])
    built = 0
    for service_id, service in policy.http.services.items():
        credential = policy.credentials[service.credential]
        assert credential.approval == "per-call"  # writes ask every time
        for operation_id, operation in service.operations.items():
            args = validate_args(operation.params, {p: ARGS[p] for p in operation.params})
            action = prepare_http(service_id, service, operation_id, operation, args)
            target = f"{action.target.method} {action.target.url}"
            assert target == EXPECTED[(service_id, operation_id)]
            reads = operation.method == "GET"
            assert operation.read_only is reads and (operation.approval == "session") is reads
            built += 1
    assert built == 4

"""`sp policy import openapi` on the real GitHub description (npm `@octokit/openapi`, pinned in
package.json): the chosen operations land in gateway.toml as declared operations that
`sp policy check` accepts, every doubt is said on the terminal, and a wrong id is answered with
the nearest ones."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from safeport.authoring.openapi_import import ImportChoice, import_openapi, load_spec
from safeport.shared.schemas.config import parse_gateway_policy
from tests.cli.cli_runner import run_sp
from tests.conftest import need

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
GITHUB = REPO / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"
CHOSEN = ("repos/get", "issues/create", "issues/list-for-repo")


@pytest.fixture
def description() -> Path:
    need(GITHUB.is_file(), "@octokit/openapi is not installed (run `npm install`)")
    return GITHUB


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "gateway.toml").touch(mode=0o600)
    (home / "gateway.toml").write_text("[gateway]\napproval_timeout_s = 120\n")
    return home


def _import(home: Path, description: Path, *extra: str) -> tuple[int, str, str]:
    ids = [arg for op in CHOSEN for arg in ("--operation", op)]
    done = run_sp("policy", "import", "openapi", str(description), *ids, *extra, home=home)
    return done.returncode, done.stdout, done.stderr


def test_github_operations_written_into_the_policy_pass_the_check(
    home: Path, description: Path
) -> None:
    policy_file = home / "gateway.toml"
    before = policy_file.read_text()
    code, printed, review = _import(home, description)
    assert code == 0, review
    assert policy_file.read_text() == before  # printing changes nothing
    assert "[http.services.github.operations.issues_create]" in printed
    # What the description leaves open is said, param by param, on the terminal too.
    assert "review: issues_create: body title (`title`): oneOf: only the string form" in review
    assert "review: repos_get: path owner (`owner`): no pattern or length" in review

    code, said, review = _import(home, description, "--write")
    assert code == 0, review
    assert "added 3 operation(s) to service 'github'" in said
    assert policy_file.read_text() == before.rstrip("\n") + "\n\n" + printed
    assert stat.S_IMODE(policy_file.stat().st_mode) == 0o600

    checked = run_sp("policy", "check", home=home)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for name in ("repos_get", "issues_create", "issues_list-for-repo"):
        assert name in checked.stdout
    policy, _ = parse_gateway_policy(policy_file.read_text())
    create = policy.http.services["github"].operations["issues_create"]
    assert (create.method, create.path, create.json_body) == (
        "POST",
        "/repos/{owner}/{repo}/issues",
        {"title": "{title}"},
    )
    listing = policy.http.services["github"].operations["issues_list-for-repo"]
    assert listing.read_only and not create.read_only


def test_a_second_import_of_the_same_operation_is_refused_and_writes_nothing(
    home: Path, description: Path
) -> None:
    assert _import(home, description, "--write")[0] == 0
    written = (home / "gateway.toml").read_text()
    code, _, review = _import(home, description, "--write")
    assert code == 2 and "already declares 'issues_create', 'issues_list-for-repo'" in review
    assert (home / "gateway.toml").read_text() == written


def test_optional_parameters_of_the_github_list_are_bounded_by_its_schema(
    home: Path, description: Path
) -> None:
    code, printed, review = _import(home, description, "--optional", "--service", "gh")
    assert code == 0, review
    listing = (
        parse_gateway_policy(printed)[0].http.services["gh"].operations["issues_list-for-repo"]
    )
    assert listing.params["state"].enum == ["open", "closed", "all"]
    assert listing.params["direction"].enum == ["asc", "desc"]
    assert listing.params["page"].type == "int"
    assert listing.params["since"].pattern is not None  # format: date-time
    assert listing.query["per_page"] == "{per_page}"


def test_an_unknown_operation_id_is_answered_with_the_nearest(
    home: Path, description: Path
) -> None:
    done = run_sp(
        "policy", "import", "openapi", str(description), "--operation", "repos/gett", home=home
    )
    assert done.returncode == 2
    assert "no operation with operationId 'repos/gett'" in done.stderr
    assert "`repos/get`" in done.stderr


def test_every_github_operation_imports_into_a_policy_the_parser_accepts(
    description: Path,
) -> None:
    spec = load_spec(description)
    ids = tuple(spec.operation_ids())
    assert len(ids) > 1000
    result = import_openapi(spec, ImportChoice(ids), None)  # parses the whole text, or raises
    assert len(result.operations) == len(ids)

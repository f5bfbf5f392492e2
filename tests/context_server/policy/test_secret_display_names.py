"""Display names of names holding a secret: the marker stands in the secret's place, a marker
always means a redaction, the name spelled with its secret is refused without being repeated,
and the read policy judges the name as written. Names that only look random show as written."""

from __future__ import annotations

import hashlib
import secrets
import string
import uuid
from pathlib import Path

import pytest

from safeport.context_server import Refused, ServeOptions, build_server
from safeport.context_server.index.search_index import SearchIndex
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.policy.display_names import (
    RedactedName,
    SecretInName,
    display_name,
    masked_path,
    raw_name,
)
from safeport.context_server.policy.read_policy import InvalidInput, ReadPolicy
from safeport.context_server.policy.request_path import parse_request_path
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import ServedRoot
from tests.context_server.index.test_index_refresh import cold_build, rows
from tests.context_server.listed import listed

ALNUM = string.ascii_letters + string.digits
GITHUB = "ghp" + "_" + "".join(secrets.choice(ALNUM) for _ in range(36))
AWS = "AKIA" + "".join(secrets.choice(string.ascii_uppercase + "234567") for _ in range(16))
SLACK = (
    "xoxp-"
    + "".join(secrets.choice(string.digits) for _ in range(12))
    + "-"
    + "".join(secrets.choice(ALNUM) for _ in range(30))
)
GH_MARK = "[REDACTED:github-token]"
AWS_MARK = "[REDACTED:aws-access-key-id]"
SLACK_MARK = "[REDACTED:slack-token]"


def _case(_value: object) -> str:
    """A stable test id: the values are generated at import, and every worker must collect
    the same names (pytest numbers the repeats)."""
    return "case"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (GITHUB, GH_MARK),
        (f"backup-{GITHUB}", f"backup-{GH_MARK}"),
        (f"backup{GITHUB}.tar.gz", f"backup{GH_MARK}.tar.gz"),
        (f"notes.{GITHUB}", f"notes.{GH_MARK}"),
        (f"creds-{AWS}.csv", f"creds-{AWS_MARK}.csv"),
        (f"creds_{AWS}_old.csv", f"creds_{AWS_MARK}_old.csv"),
        (f"{AWS}.{GITHUB}", f"{AWS_MARK}.{GH_MARK}"),
        (f"slack {SLACK}.txt", f"slack {SLACK_MARK}.txt"),
        (f"caf\xe9-{GITHUB}".encode("latin-1"), f"caf%E9-{GH_MARK}"),
    ],
    ids=_case,
)
def test_a_secret_in_a_name_shows_as_its_marker_and_leads_back_only_through_its_folder(
    raw: str | bytes, shown: str
) -> None:
    data = raw.encode() if isinstance(raw, str) else raw
    assert display_name(data) == shown
    assert display_name(raw) == shown
    with pytest.raises(RedactedName):
        raw_name(shown)
    assert parse_request_path(f"src/{shown}", ["ws"]).parts == ("src", shown)


@pytest.mark.parametrize(
    "spelled",
    [GITHUB, f"backup-{GITHUB}", f"creds_{AWS}.csv", f"x-{SLACK}", f"a%2541{GITHUB}"],
    ids=_case,
)
def test_a_name_spelled_with_its_secret_is_refused_and_the_refusal_does_not_repeat_it(
    spelled: str,
) -> None:
    with pytest.raises(SecretInName):
        raw_name(spelled)
    with pytest.raises(InvalidInput) as refused:
        parse_request_path(f"src/{spelled}", ["ws"])
    assert not any(s[4:] in str(refused.value) for s in (GITHUB, AWS, SLACK))
    echoed = masked_path(f"src/{spelled}/x")
    assert "[REDACTED:" in echoed and echoed.startswith("src/") and echoed.endswith("/x")
    assert not any(s[4:] in echoed for s in (GITHUB, AWS, SLACK))


def test_a_name_refused_once_is_refused_again_however_long() -> None:
    # Verdicts on requested names are remembered (those that can be names at all): the
    # remembered verdict refuses as the first did.
    for spelled in (f"backup-{GITHUB}", "x" * 800 + f"-{GITHUB}"):
        for _ in range(2):
            with pytest.raises(SecretInName):
                raw_name(spelled)
            with pytest.raises(InvalidInput):
                parse_request_path(f"src/{spelled}", ["ws"])


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"[REDACTED:github-token].md", "%5BREDACTED:github-token].md"),
        (b"x[REDACTED:jwt]", "x%5BREDACTED:jwt]"),
        (b"%5BREDACTED:jwt]", "%255BREDACTED:jwt]"),
        (b"[REDACTED].md", "[REDACTED].md"),  # not the marker's shape: as written
        (b"[notes].md", "[notes].md"),
    ],
    ids=_case,
)
def test_a_marker_spelled_in_a_real_name_is_escaped_so_a_marker_always_means_a_redaction(
    raw: bytes, shown: str
) -> None:
    assert display_name(raw) == shown
    assert raw_name(shown) == raw


LOOK_RANDOM = [
    hashlib.sha1(b"commit").hexdigest(),
    f"pack-{hashlib.sha1(b'pack').hexdigest()}.idx",
    hashlib.sha256(b"blob").hexdigest(),
    f"{hashlib.md5(b'cache').hexdigest()}.cache",
    str(uuid.uuid4()),
    f"run_{uuid.uuid4().hex}.txt",
    "objects",
    "__init__.py",
    "test_api_key_rotation.py",
    "password_reset_view.py",
    "a" * 40,
    "AKIA_README.md",
    "bearer_auth.cpython-311.pyc",  # a word before '_' is not a header's keyword
    "authorization_bearer_handler.py",
    "token_refresh_worker.ts",
    "ghp_placeholder.md",
]


@pytest.mark.parametrize("name", LOOK_RANDOM, ids=_case)
def test_a_name_that_only_looks_random_shows_as_written(name: str) -> None:
    assert display_name(name.encode()) == name
    assert raw_name(name) == name.encode()


@pytest.fixture
def private_token_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WorkspaceService:
    """A workspace whose owner made names holding `ghp_` private."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    (home / "context.toml").write_text('[private]\npatterns = ["*ghp_*"]\n')
    root = tmp_path / "ws"
    (root / f"dump-{GITHUB}").mkdir(parents=True)
    (root / f"dump-{GITHUB}" / "inside.md").write_text("okapi inside\n")
    (root / f"notes-{GITHUB}.md").write_text("okapi notes\n")
    (root / "plain.md").write_text("okapi plain\n")
    _server, service = build_server(ServeOptions(roots=[str(root)], origin="tests"))
    return service


def test_the_read_policy_judges_a_redacted_name_as_written(
    private_token_names: WorkspaceService,
) -> None:
    service = private_token_names
    shown = listed(service.list_directory(".", 200, None).model_dump())
    assert shown[f"notes-{GH_MARK}.md"]["blocked"] == "private"
    assert shown[f"dump-{GH_MARK}"]["blocked"] == "private"
    for path in (f"notes-{GH_MARK}.md", f"dump-{GH_MARK}/inside.md"):
        with pytest.raises(Refused) as refused:
            service.read_file(path)
        assert refused.value.reason == "private"
    assert service.search_files("*", ".", 50).matches == ["plain.md"]
    service.index.refresh()
    assert [h.path for h in service.search_project("okapi", ".", 50, None).hits] == ["plain.md"]


def test_names_holding_secrets_added_and_removed_later_reach_the_index_by_their_display_form(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("APP = 1\n")
    workspace = Workspace([ServedRoot("ws", root)], ReadPolicy())
    index = SearchIndex(tmp_path / "cache" / "index.sqlite", workspace)
    try:
        assert index.refresh().walked_everything
        (root / f"late-{GITHUB}").mkdir()
        (root / f"late-{GITHUB}" / "late.md").write_text("late\n")
        (root / "src" / f"new_{AWS}.md").write_text("new\n")
        (root / "src" / f"gone_{GITHUB}.md").write_text("gone\n")
        (root / "src" / f"twin-{GITHUB}.md").write_text("first\n")
        other = "ghp" + "_" + "".join(secrets.choice(ALNUM) for _ in range(36))
        (root / "src" / f"twin-{other}.md").write_text("second\n")
        assert not index.refresh().walked_everything  # by the folders' events
        (root / "src" / f"gone_{GITHUB}.md").unlink()
        assert not index.refresh().walked_everything
        held = rows(index.path)
        assert [rel for _root, rel, *_ in held] == [
            f"late-{GH_MARK}/late.md",
            "src/app.py",
            f"src/new_{AWS_MARK}.md",
        ]
        assert held == cold_build(index, tmp_path)
        data = b"".join(p.read_bytes() for p in (tmp_path / "cache").iterdir() if p.is_file())
        assert not any(s[4:].encode() in data for s in (GITHUB, AWS, other))
    finally:
        index.close()
        workspace.close()

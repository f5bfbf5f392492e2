"""`[private]` patterns holding `/` match paths relative to each root: the files they name are
refused by every read path and search (directly, through a link, in listings, trees, file
searches and content searches with and without the index), their neighbours still read, and a
pattern that cannot be a path is refused with the reason."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from safeport.context_server import Refused, ServeOptions, build_server
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.policy.private_names import PathGlobs
from safeport.errors import ConfigError
from tests.context_server.listed import listed

WORD = "okapi"  # in every file, so every search would find each one


@pytest.mark.parametrize(
    ("pattern", "path", "matched"),
    [
        ("config/prod/*.yaml", ("config", "prod", "db.yaml"), True),
        ("config/prod/*.yaml", ("config", "prod", "DB.YAML"), True),  # names are casefolded
        ("config/prod/*.yaml", ("config", "prod", "db.yaml~"), True),  # a backup copy
        ("config/prod/*.yaml", ("config", "staging", "db.yaml"), False),
        ("config/prod/*.yaml", ("other", "config", "prod", "db.yaml"), False),  # from the root
        ("config/prod/*.yaml", ("config", "prod", "deep", "db.yaml"), False),  # `*` is one level
        ("/config/prod/*.yaml", ("config", "prod", "db.yaml"), True),
        ("**/keys/*.json", ("keys", "a.json"), True),
        ("**/keys/*.json", ("app", "x", "keys", "a.json"), True),
        ("**/keys/*.json", ("app", "keys", "a.yaml"), False),
        ("config/prod", ("config", "prod", "any", "file.txt"), True),  # a folder hides below
        ("config/**", ("config", "a", "b.txt"), True),
        ("config/p?od/[a-c]*.yaml", ("config", "prod", "b.yaml"), True),
        ("config/p?od/[!a-c]*.yaml", ("config", "prod", "b.yaml"), False),
    ],
)
def test_a_path_pattern_matches_from_the_root(
    pattern: str, path: tuple[str, ...], matched: bool
) -> None:
    assert PathGlobs([pattern.casefold()]).match(path) is matched


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WorkspaceService:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    (home / "context.toml").write_text(
        '[private]\npatterns = ["config/prod/*.yaml", "**/keys/*.json"]\n'
        'folders = ["reports/customers"]\n'
    )
    root = tmp_path / "ws"
    files = {
        "config/prod/db.yaml": "prod",
        "config/prod/notes.txt": "prod notes",
        "config/staging/db.yaml": "staging",
        "app/deep/keys/api.json": "keys",
        "app/deep/keys/README.md": "about the keys",
        "reports/customers/list.csv": "customers",
        "reports/summary.csv": "summary",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"{text} {WORD}\n")
    os.symlink("config/prod/db.yaml", root / "link.yaml")
    _, served = build_server(ServeOptions(roots=[str(root)]))
    return served


PRIVATE = ["config/prod/db.yaml", "app/deep/keys/api.json", "reports/customers/list.csv"]
NEIGHBOURS = [
    "config/prod/notes.txt",
    "config/staging/db.yaml",
    "app/deep/keys/README.md",
    "reports/summary.csv",
]


def _refused(call: object) -> str:
    assert callable(call)
    with pytest.raises(Refused) as caught:
        call()
    return caught.value.reason


def test_every_read_path_refuses_what_a_path_pattern_names(service: WorkspaceService) -> None:
    for path in [*PRIVATE, "link.yaml", "reports/customers"]:
        assert _refused(lambda p=path: service.read_file(p)) == "private", path
        assert _refused(lambda p=path: service.get_file_info(p, True)) == "private", path
        assert _refused(lambda p=path: service.read_file_excerpt(p, 1, 10, 1)) == "private"
        assert _refused(lambda p=path: service.fetch(p)) == "private", path
    many = service.read_multiple_files([*PRIVATE, NEIGHBOURS[0]]).files
    assert [item.ok for item in many] == [False, False, False, True]
    assert {item.path for item in many[:3]} == {"<private>"}
    blocked = listed(service.list_directory("config/prod", 100, None).model_dump())
    assert blocked["db.yaml"]["blocked"] == "private" and blocked["notes.txt"]["blocked"] == ""
    assert listed(service.list_directory(".", 100, None).model_dump())["link.yaml"]["blocked"]
    tree = service.directory_tree(".", 10, 1000).model_dump()
    # Shown as a private name and nothing more, as a private name always is.
    assert {path for path, why in tree["blocked"].items() if why == "private"} == {
        "config/prod/db.yaml", "app/deep/keys/api.json", "reports/customers", "link.yaml",
    }  # fmt: skip
    assert "config/prod/notes.txt" not in tree["blocked"]


def test_every_search_leaves_out_what_a_path_pattern_names(service: WorkspaceService) -> None:
    for pattern in ("*", "**/*.json", "**/*.yaml", "*.csv"):
        found = service.search_files(pattern, ".", 1000).matches
        assert not set(found) & set(PRIVATE), (pattern, found)
    assert set(NEIGHBOURS) <= set(service.search_files("*", ".", 1000).matches)
    for indexed in (False, True):
        if indexed:
            service.index.refresh()
        hits = {hit.path for hit in service.search_project(WORD, ".", 200, None).hits}
        assert hits == set(NEIGHBOURS), (indexed, hits)
        assert {item.id for item in service.search(WORD).results} == set(NEIGHBOURS)
    for path in NEIGHBOURS:
        assert WORD in service.read_file(path).text
    service.journal.close()


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("config/../prod/*.yaml", "no empty, `.` or `..` components"),
        ("config//*.yaml", "no empty, `.` or `..` components"),
        ("config/**.yaml", "`**` stands only as a whole component"),
    ],
)
def test_a_pattern_that_cannot_be_a_path_is_refused_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str, reason: str
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    (home / "context.toml").write_text(f'[private]\npatterns = ["{pattern}"]\n')
    with pytest.raises(ConfigError) as caught:
        build_server(ServeOptions(roots=[str(tmp_path)]))
    assert reason in caught.value.message and pattern in caught.value.message

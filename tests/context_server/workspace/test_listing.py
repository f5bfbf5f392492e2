"""Listings as clients receive them: grouped by type, typed in the output schema, every entry
looked at by its own name on disk, and folders listed again without being read again."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from jsonschema.validators import validator_for

from safeport.context_server import ServeOptions, build_server
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.policy.read_policy import ReadPolicy, Refused
from safeport.context_server.sdk_seam import find_tool
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import ServedRoot
from tests.context_server.listed import listed

REASONS = ["private", "ignored", "out-of-scope", "binary", "unreadable-type"]


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WorkspaceService:
    monkeypatch.setenv("SAFEPORT_HOME", str(tmp_path / "home"))
    root = tmp_path / "ws"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "src" / "deep" / "inner.md").write_text("# inner\n")
    (root / "node_modules" / "left-pad").mkdir(parents=True)
    (root / "node_modules" / "left-pad" / "index.js").write_text("CANARYignored\n")
    (root / "logo.png").write_bytes(b"\x89PNG" + bytes(60))
    (root / ".env").write_text("TOKEN=CANARYlisting\n")
    (root / "docs").symlink_to("src")
    (root / "leak").symlink_to(".env")
    os.mkfifo(root / "pipe")
    _, service = build_server(ServeOptions(roots=[str(root)]))
    return service


def tool_schema(service: WorkspaceService, name: str) -> dict[str, Any]:
    """The output schema the server declares for a tool: what a client validates against."""
    server, _ = build_server(ServeOptions(roots=[str(service.workspace.roots[0].path)]))
    tool = find_tool(server, name)
    assert tool is not None and tool.output_schema is not None
    return tool.output_schema


def test_a_listing_names_every_entry_once_by_type_and_blocked_ones_with_why(
    service: WorkspaceService,
) -> None:
    page = service.list_directory(".", 100, None).model_dump()
    assert page["files"] == {"logo.png": 64}
    assert page["directories"] == ["node_modules", "src"]
    assert page["symlinks"] == ["docs"]
    assert page["others"] == [".env", "leak", "pipe"]
    assert page["blocked"] == {
        ".env": "private",
        "leak": "private",
        "logo.png": "binary",
        "node_modules": "ignored",
        "pipe": "unreadable-type",
    }
    assert "CANARY" not in service.list_directory(".", 100, None).wire_json()


def test_a_page_holds_the_entries_of_its_place_in_name_order(service: WorkspaceService) -> None:
    every = list(listed(service.list_directory(".", 100, None).model_dump()))
    first = service.list_directory(".", 3, None)
    rest = service.list_directory(".", 100, first.next_cursor)
    assert list(listed(first.model_dump())) == every[:3]
    assert list(listed(rest.model_dump())) == every[3:]
    assert first.total_entries == rest.total_entries == len(every)


def test_a_tree_is_keyed_by_path_in_walk_order_and_enters_no_blocked_folder(
    service: WorkspaceService,
) -> None:
    tree = service.directory_tree(".", 5, 500).model_dump()
    assert tree["directories"] == ["node_modules", "src", "src/deep"]
    assert list(tree["files"]) == ["logo.png", "src/app.py", "src/deep/inner.md"]
    assert tree["files"]["src/app.py"] == len("print('hi')\n")
    assert tree["blocked"]["node_modules"] == "ignored"
    assert not any(path.startswith("node_modules/") for path in listed(tree))
    assert listed(tree)["docs"]["type"] == "symlink"  # listed, never walked into


@pytest.mark.parametrize("tool", ["list_directory", "directory_tree"])
def test_every_group_is_typed_in_the_output_schema_and_a_wrong_value_fails_it(
    service: WorkspaceService, tool: str
) -> None:
    schema = tool_schema(service, tool)
    groups = schema["properties"]
    # The entries are described, not typed one by one: a client validates a large folder's
    # files and names in one step each, not one subschema per entry (the server's own model
    # types them).
    assert groups["files"]["type"] == "object" and "additionalProperties" not in groups["files"]
    assert "integer" in groups["files"]["description"]
    assert groups["blocked"]["additionalProperties"]["enum"] == REASONS
    for name in ("directories", "symlinks", "others"):
        assert groups[name]["type"] == "array" and "items" not in groups[name]
        assert "name" in groups[name]["description"]
    assert {"files", "directories", "symlinks", "others", "blocked"} <= set(schema["required"])
    validator = validator_for(schema)(schema)
    result = (
        service.list_directory(".", 100, None)
        if tool == "list_directory"
        else service.directory_tree(".", 3, 500)
    )
    good = result.model_dump(mode="json")
    assert not list(validator.iter_errors(good))
    for group, bad in (
        ("files", ["a.py"]),
        ("blocked", {".env": "secret"}),
        ("directories", "src"),
        ("others", {"fifo": 1}),
    ):
        assert list(validator.iter_errors({**good, group: bad})), group


@pytest.mark.parametrize(
    ("tool", "field", "value"),
    [("list_directory", "next_cursor", "o1.0.3"), ("read_file", "next_line", 7)],
)
def test_an_optional_value_is_typed_as_a_type_list_with_null(
    service: WorkspaceService, tool: str, field: str, value: str | int
) -> None:
    # A type list, not `anyOf`: the same values, checked without a subschema per option.
    schema = tool_schema(service, tool)
    assert "anyOf" not in schema["properties"][field]
    assert "null" in schema["properties"][field]["type"]
    validator = validator_for(schema)(schema)
    result = (
        service.list_directory(".", 100, None)
        if tool == "list_directory"
        else service.read_file("src/app.py")
    )
    good = result.model_dump(mode="json")
    for ok in (None, value):
        assert not list(validator.iter_errors({**good, field: ok}))
    assert list(validator.iter_errors({**good, field: [value]}))


def test_names_that_are_not_their_own_display_form_are_looked_at_by_their_name_on_disk(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for name, size in ((b"caf\xe9.py", 5), (b"100%41.txt", 7), (b"tab\tname.md", 9)):
        (root / os.fsdecode(name)).write_bytes(b"x" * size)
    workspace = Workspace([ServedRoot("ws", root)], ReadPolicy())
    page = workspace.list_folder(workspace.locate("."))
    shown = {e.name: (e.type, e.size, e.blocked) for e in page.entries}
    assert shown == {
        "caf%E9.py": ("file", 5, None),
        "100%2541.txt": ("file", 7, None),
        "tab%09name.md": ("file", 9, None),
    }


def test_a_folder_listed_again_is_not_read_again_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    for i in range(40):  # more folders than the cache held before (8)
        (root / f"d{i:02d}").mkdir(parents=True)
        (root / f"d{i:02d}" / "a.py").write_text("a\n")
    workspace = Workspace([ServedRoot("ws", root)], ReadPolicy())
    reads: list[int] = []
    real = os.listdir

    def counted(fd: Any) -> list[str]:
        reads.append(fd)
        return real(fd)

    monkeypatch.setattr(os, "listdir", counted)
    folders = [workspace.locate(f"d{i:02d}") for i in range(40)]
    for _ in range(3):
        for folder in folders:
            assert [e.name for e in workspace.list_folder(folder).entries] == ["a.py"]
    assert len(reads) == 40
    (root / "d07" / "b.py").write_text("b\n")
    again = workspace.list_folder(workspace.locate("d07"))
    assert [e.name for e in again.entries] == ["a.py", "b.py"] and len(reads) == 41


def test_safeport_folders_among_the_entries_are_private_and_only_they(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for folder in ("app/state/audit", "app/state/audit2", "app/state/audi", ".sp", ".sp-notes"):
        (root / folder).mkdir(parents=True)
    (root / "app" / "state" / "audit.py").write_text("x\n")
    (root / ".sp.md").write_text("x\n")
    locations = (PurePosixPath(root / "app/state/audit"), PurePosixPath(root / ".sp"))
    workspace = Workspace([ServedRoot("ws", root)], ReadPolicy(private_locations=locations))

    def blocked(path: str) -> dict[str, str | None]:
        return {e.name: e.blocked for e in workspace.list_folder(workspace.locate(path)).entries}

    assert blocked("app/state") == {
        "audi": None,
        "audit": "private",
        "audit.py": None,
        "audit2": None,
    }
    assert blocked(".") == {".sp": "private", ".sp-notes": None, ".sp.md": None, "app": None}
    assert blocked("app") == {"state": None}
    # Inside one, a request is refused before anything is listed.
    with pytest.raises(Refused):
        workspace.locate("app/state/audit")

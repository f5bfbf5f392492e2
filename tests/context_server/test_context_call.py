"""`sp context call TOOL ARGS` starts the real context server over stdio, calls one tool with
the MCP SDK's client and prints the answer; a tool's error is exit 1, a wrong call exit 2."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from safeport.context_server.shell_call import parse_arguments
from safeport.errors import UsageError
from tests.cli.cli_runner import run_sp


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("inventory service\nsecond line\n")
    (root / "007").write_text("a file named by digits\n")
    (root / ".env").write_text("DATABASE_URL=postgres://u:p@db/x\n")
    return root


def call(home: Path, root: Path, *args: str) -> tuple[int, str, str]:
    done = run_sp("context", "call", *args, "--root", str(root), home=home)
    return done.returncode, done.stdout, done.stderr


def test_a_tool_is_called_with_key_value_words_and_its_answer_printed(
    tmp_path: Path, workspace: Path
) -> None:
    code, out, err = call(tmp_path / "h", workspace, "read_file", "path=README.md")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["path"] == "README.md" and answer["text"] == "inventory service\nsecond line\n"


def test_a_string_key_keeps_digits_as_a_string(tmp_path: Path, workspace: Path) -> None:
    code, out, err = call(tmp_path / "h", workspace, "read_file", "path=007")
    assert code == 0, err
    assert "a file named by digits" in json.loads(out)["text"]


def test_one_json_object_and_json_output_have_the_documented_shape(
    tmp_path: Path, workspace: Path
) -> None:
    code, out, err = call(tmp_path / "h", workspace, "read_file", '{"path": "README.md"}', "--json")
    assert code == 0, err
    answer = json.loads(out)
    assert set(answer) == {"tool", "result", "text"}
    assert answer["tool"] == "read_file" and answer["result"]["path"] == "README.md"


def test_a_refused_read_is_exit_1_with_the_tools_own_reason(
    tmp_path: Path, workspace: Path
) -> None:
    code, out, err = call(tmp_path / "h", workspace, "read_file", "path=.env")
    assert code == 1 and out == ""
    assert "refused" in err and "private" in err and "postgres" not in err
    code, out, _ = call(tmp_path / "h", workspace, "read_file", "path=.env", "--json")
    assert code == 1 and json.loads(out)["exit_code"] == 1


def test_an_unknown_tool_or_a_malformed_word_is_a_usage_error(
    tmp_path: Path, workspace: Path
) -> None:
    code, _, err = call(tmp_path / "h", workspace, "read_fil", "path=README.md")
    assert code == 2 and "no tool 'read_fil'" in err and "read_file" in err
    code, _, err = call(tmp_path / "h", workspace, "read_file", "path")
    assert code == 2 and "'path' is not key=value" in err


def test_words_are_typed_by_the_schema() -> None:
    schema = {
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer"},
            "lines": {"anyOf": [{"type": "array"}, {"type": "null"}]},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        }
    }
    words = ["path=12", "limit=12", "lines=[1, 2]", "note=true", "free=x y"]
    assert parse_arguments(words, schema) == {
        "path": "12", "limit": 12, "lines": [1, 2], "note": "true", "free": "x y",
    }  # fmt: skip
    assert parse_arguments(['{"path": 1}'], schema) == {"path": 1}
    for bad in (["path"], ["=x"], ["path=a", "path=b"], ["{not json"], ["[1]"]):
        with pytest.raises(UsageError):
            parse_arguments(bad, schema)


def test_a_secret_inside_an_ordinary_file_does_not_leave_through_the_shell(
    tmp_path: Path, workspace: Path
) -> None:
    token = "ghp_" + secrets.token_hex(18)  # a GitHub token's shape, drawn fresh
    (workspace / "settings.py").write_text(f'DEBUG = True\nGITHUB_TOKEN = "{token}"\nPORT = 80\n')
    code, out, err = call(tmp_path / "h", workspace, "read_file", "path=settings.py", "--json")
    assert code == 0, err
    assert token not in out and token not in err and token[:16] not in out
    assert "[REDACTED:" in json.loads(out)["result"]["text"]
    assert "PORT = 80" in json.loads(out)["result"]["text"]  # the lines beside it are served
    code, out, err = call(tmp_path / "h", workspace, "search_project", f"query={token[4:20]}")
    assert code == 0, err
    assert token not in out and token not in err and token[:16] not in out

"""The policy reference is generated from the schema: the committed page is what `sp policy
reference` prints, every key of every table is on it with a description and an example, and
every example is a valid value of the key it illustrates."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, TypeAdapter

from harness.gateway import REPO
from safeport.authoring.policy_examples import EXAMPLES
from safeport.authoring.reference import SECTIONS, UndocumentedKey, policy_reference
from safeport.shared.schemas.config import GatewayPolicy
from tests.cli.test_help_and_errors import run

PAGE = REPO / "docs" / "reference" / "policy.md"


def test_the_committed_page_is_the_generated_one(tmp_path: Path) -> None:
    printed = run(tmp_path, "policy", "reference")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == policy_reference()
    assert PAGE.read_text() == printed.stdout, (
        "docs/reference/policy.md is stale: run `sp policy reference > docs/reference/policy.md`"
    )


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    """Every model reachable from ``model`` through its fields (dicts, lists, optionals)."""
    seen.add(model)
    for field in model.model_fields.values():
        for found in _nested(field.annotation):
            if found not in seen:
                _models(found, seen)
    return seen


def _nested(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _nested(arg)]


def test_every_table_of_the_schema_has_a_section_and_every_key_a_row() -> None:
    assert {section.model for section in SECTIONS} == _models(GatewayPolicy, set())
    page = PAGE.read_text()
    for section in SECTIONS:
        for name, field in section.model.model_fields.items():
            assert field.description, f"{section.model.__name__}.{name}"
            assert f"| `{name}` |" in page
    expected = {f"{s.model.__name__}.{name}" for s in SECTIONS for name in s.model.model_fields}
    assert set(EXAMPLES) == expected


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_each_example_is_a_valid_value_of_its_key(key: str) -> None:
    model_name, name = key.split(".")
    model = next(s.model for s in SECTIONS if s.model.__name__ == model_name)
    example = EXAMPLES[key]
    if example.startswith("["):
        return  # a table's header: what follows it is another section's
    parsed = tomllib.loads(example)
    [(written, value)] = parsed.items()
    assert written == name
    field = model.model_fields[name]
    checked: Any = (
        Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    )
    TypeAdapter(checked).validate_python(value)


def test_a_key_without_a_description_fails_the_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    field = GatewayPolicy.model_fields["gateway"]
    monkeypatch.setattr(field, "description", None)
    with pytest.raises(UndocumentedKey, match=r"GatewayPolicy\.gateway has no description"):
        policy_reference()


def test_sp_policy_check_answers_a_misspelt_key_with_the_nearest_one(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "gateway.toml").write_text(
        '[credentials.t]\nkind = "token"\n\n[http.services.api]\n'
        'base_url = "https://api.example.com"\ncredential = "t"\n\n'
        '[http.services.api.operations.create]\nmethod = "POST"\npath = "/x"\n'
        'body = { title = "x" }\n'
    )
    done = run(home, "policy", "check")
    assert done.returncode != 0
    assert (
        "gateway.toml line 11: unknown key `http.services.api.operations.create.body`; "
        "did you mean `json_body`?"
    ) in done.stdout + done.stderr

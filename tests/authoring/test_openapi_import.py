"""Chosen operations of a small description become gateway.toml tables the policy parser
accepts: `$ref`s followed (local only), path-level parameters merged, a body templated, doubts
written beside what they are about, and an unknown operationId answered with the nearest."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from safeport.authoring.openapi_import import ImportChoice, import_openapi, load_spec
from safeport.errors import ConfigError
from safeport.shared.schemas.config import parse_gateway_policy

DESCRIPTION = {
    "openapi": "3.0.3",
    "info": {"title": "Deploys", "version": "1"},
    "servers": [
        {"url": "https://{region}.deploys.dev/api/", "variables": {"region": {"default": "eu"}}}
    ],
    "paths": {
        "/projects/{project-id}/deployments": {
            "parameters": [{"$ref": "#/components/parameters/ProjectId"}],
            "get": {
                "operationId": "listDeployments",
                "summary": "List deployments",
                "parameters": [
                    {
                        "name": "state",
                        "in": "query",
                        "required": True,
                        "schema": {"$ref": "#/components/schemas/State"},
                    },
                    {
                        "name": "per_page",
                        "in": "query",
                        "schema": {"type": "integer", "maximum": 100},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {
                                "schema": {"type": "array", "items": {"type": "object"}}
                            }
                        },
                    }
                },
            },
            "post": {
                "operationId": "createDeployment",
                "summary": "Create a deployment",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": "#/components/schemas/NewDeployment"}
                        }
                    },
                },
                "responses": {
                    "201": {
                        "description": "made",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["id", "state", "links"],
                                    "properties": {
                                        "id": {"type": "integer"},
                                        "state": {"type": "string"},
                                        "links": {"type": "object"},
                                    },
                                }
                            }
                        },
                    }
                },
            },
        },
    },
    "components": {
        "parameters": {
            "ProjectId": {
                "name": "project-id",
                "in": "path",
                "required": True,
                "schema": {"type": "string", "pattern": "^[a-z0-9-]{3,40}$"},
            }
        },
        "schemas": {
            "State": {"type": "string", "enum": ["pending", "live", "failed"]},
            "NewDeployment": {
                "type": "object",
                "required": ["ref", "environment", "target"],
                "properties": {
                    "ref": {"type": "string", "maxLength": 255},
                    "environment": {"$ref": "#/components/schemas/Env"},
                    "notes": {"type": "string"},
                    "target": {
                        "type": "object",
                        "required": ["replicas"],
                        "properties": {"replicas": {"type": "integer", "minimum": 1, "maximum": 9}},
                    },
                    "id": {"type": "integer", "readOnly": True},
                },
            },
            "Env": {"type": "string", "enum": ["staging", "production"]},
        },
    },
}


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "deploys.json"
    path.write_text(json.dumps(DESCRIPTION))
    return path


def test_operations_become_tables_the_policy_accepts(spec_file: Path) -> None:
    result = import_openapi(
        load_spec(spec_file), ImportChoice(("listDeployments", "createDeployment")), None
    )
    policy, _ = parse_gateway_policy(result.text)
    service = policy.http.services["deploys"]
    assert service.base_url == "https://eu.deploys.dev/api"
    assert policy.credentials["deploys"].kind == "token"
    listing = service.operations["listDeployments"]
    assert (listing.method, listing.path, listing.read_only) == (
        "GET",
        "/projects/{project_id}/deployments",
        True,
    )
    assert listing.query == {"state": "{state}"}
    assert listing.params["project_id"].pattern == "[a-z0-9-]{3,40}"
    assert listing.params["state"].enum == ["pending", "live", "failed"]
    create = service.operations["createDeployment"]
    assert create.read_only is False
    assert create.json_body == {
        "ref": "{ref}",
        "environment": "{environment}",
        "target": {"replicas": "{target_replicas}"},
    }
    assert create.params["target_replicas"].min == 1 and create.params["target_replicas"].max == 9
    assert create.params["ref"].max_length == 255
    assert create.response_fields == ["id", "state"]  # `links` is no scalar
    assert "optional, not imported: per_page" in result.text
    assert "a nested object; only its fields below are sent" in result.text
    assert "the answer is a list" in " ".join(result.warnings())


def test_optional_parameters_come_in_on_request_and_doubts_sit_beside_them(
    spec_file: Path,
) -> None:
    result = import_openapi(
        load_spec(spec_file), ImportChoice(("createDeployment",), optional=True), None
    )
    create = (
        parse_gateway_policy(result.text)[0].http.services["deploys"].operations["createDeployment"]
    )
    assert create.json_body is not None and create.json_body["notes"] == "{notes}"
    assert "id" not in create.json_body  # readOnly: the server's, never sent
    lines = result.text.splitlines()
    notes = lines.index('params.notes = { pattern = ".*", max_length = 256 }')
    assert lines[notes - 1].startswith("# REVIEW: no pattern or length in the description")
    assert any("body notes (`notes`)" in w for w in result.warnings())


def test_yaml_reads_like_json(spec_file: Path, tmp_path: Path) -> None:
    import yaml

    yaml_file = tmp_path / "deploys.yaml"
    yaml_file.write_text(yaml.safe_dump(DESCRIPTION))  # keys sorted: another order
    choice = ImportChoice(("createDeployment",))
    from_yaml = parse_gateway_policy(import_openapi(load_spec(yaml_file), choice, None).text)[0]
    from_json = parse_gateway_policy(import_openapi(load_spec(spec_file), choice, None).text)[0]
    assert from_yaml == from_json


def test_an_unknown_operation_id_names_the_nearest(spec_file: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        import_openapi(load_spec(spec_file), ImportChoice(("createDeploy",)), None)
    assert "no operation with operationId 'createDeploy'" in caught.value.message
    assert str(caught.value.hint).startswith("did you mean `createDeployment`")


def test_a_remote_ref_is_refused(tmp_path: Path) -> None:
    remote = json.loads(json.dumps(DESCRIPTION))
    remote["components"]["schemas"]["Env"] = {"$ref": "https://example.com/env.json"}
    path = tmp_path / "remote.json"
    path.write_text(json.dumps(remote))
    with pytest.raises(ConfigError, match="points outside this file"):
        import_openapi(load_spec(path), ImportChoice(("createDeployment",)), None)


def test_a_self_referring_ref_and_a_non_openapi_file_are_refused(tmp_path: Path) -> None:
    looped = json.loads(json.dumps(DESCRIPTION))
    looped["components"]["schemas"]["Env"] = {"$ref": "#/components/schemas/Env"}
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(looped))
    with pytest.raises(ConfigError, match="refers to itself"):
        import_openapi(load_spec(path), ImportChoice(("createDeployment",)), None)
    path.write_text('{"swagger": "2.0"}')
    with pytest.raises(ConfigError, match="not an OpenAPI 3 description"):
        load_spec(path)


def test_into_an_existing_policy_only_what_is_missing_is_added(spec_file: Path) -> None:
    spec = load_spec(spec_file)
    first = import_openapi(spec, ImportChoice(("listDeployments",)), None).text
    more = import_openapi(spec, ImportChoice(("createDeployment",)), first).text
    assert "[credentials." not in more and "[http.services.deploys]" not in more
    tomllib.loads(first + "\n" + more)
    with pytest.raises(ConfigError, match="already declares 'listDeployments'"):
        import_openapi(spec, ImportChoice(("listDeployments",)), first)


def test_a_description_without_an_https_server_needs_a_base_url(tmp_path: Path) -> None:
    plain = {**DESCRIPTION, "servers": [{"url": "/api"}]}
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(plain))
    with pytest.raises(ConfigError, match="no https base URL"):
        import_openapi(load_spec(path), ImportChoice(("listDeployments",)), None)
    given = ImportChoice(("listDeployments",), service="deploy", base_url="https://d.example/api")
    text = import_openapi(load_spec(path), given, None).text
    assert parse_gateway_policy(text)[0].http.services["deploy"].base_url == "https://d.example/api"


def test_the_descriptions_text_cannot_write_a_key_or_hide_one(tmp_path: Path) -> None:
    # Line breaks in what ends up in comments (a path, a media type, property names, the id)
    # would end the comment and add a key to the table above: here the service's.
    injected = "\nallow_private_addresses = true\n#"
    hostile = {
        "openapi": "3.0.3",
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            f"/items{injected}": {
                "post": {
                    "operationId": f"make{injected}",
                    "summary": "Make an item\u202e, reads only",
                    "requestBody": {
                        "content": {
                            f"text/plain{injected}": {},
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        f"name{injected}": {"type": "string"},
                                        "size": {"type": "integer", "maximum": 9},
                                    },
                                    "required": ["size"],
                                }
                            },
                        }
                    },
                }
            }
        },
    }
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile))
    result = import_openapi(load_spec(path), ImportChoice((f"make{injected}",)), None)
    policy, _ = parse_gateway_policy(result.text)
    service = policy.http.services["example"]
    assert not service.allow_private_addresses
    assert not any(line.startswith("allow") for line in result.text.splitlines()), result.text
    assert "\\u000aallow_private_addresses = true\\u000a#" in result.text  # shown, escaped
    assert all(ch.isprintable() for ch in result.text.replace("\n", "")), result.text
    assert service.operations["make_allow_private_addresses_true"].description == (
        "Make an item\u202e, reads only"
    )


def test_a_fixed_header_the_description_requires_is_flagged(tmp_path: Path) -> None:
    override = {
        "name": "X-HTTP-Method-Override",
        "in": "header",
        "required": True,
        "schema": {"type": "string", "enum": ["DELETE"]},
    }
    described = {
        "openapi": "3.0.3",
        "servers": [{"url": "https://api.example.com"}],
        "paths": {"/items": {"get": {"operationId": "listItems", "parameters": [override]}}},
    }
    path = tmp_path / "override.json"
    path.write_text(json.dumps(described))
    result = import_openapi(load_spec(path), ImportChoice(("listItems",)), None)
    flagged = "header 'X-HTTP-Method-Override' is sent as 'DELETE' on every call: check it"
    assert f"# REVIEW: {flagged}" in result.text
    assert result.warnings() == [f"listItems: {flagged}"]

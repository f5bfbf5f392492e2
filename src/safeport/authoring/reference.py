"""The policy reference (docs/reference/policy.md), generated from the gateway.toml models.

Every key of every table with its type, default, the one sentence of its field's description and
an example. The page is what the schema says, never a second account of it: a test compares the
committed page with :func:`policy_reference`, so a key added to the models without a description
or an example fails that test instead of going undocumented.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from safeport.authoring.policy_examples import EXAMPLES
from safeport.authoring.preset_reference import preset_table
from safeport.shared.schemas.config import (
    ApprovalsSettings,
    AuditSettings,
    CallerRule,
    Callers,
    Credential,
    GatewayPolicy,
    GatewaySettings,
    HttpOperation,
    HttpSection,
    HttpService,
    RemoteSettings,
    SqlDatabase,
    SqlQuery,
    SqlSection,
    SshCommand,
    SshHost,
    SshSection,
    TimestampSettings,
    TsaSettings,
)
from safeport.shared.schemas.config_oauth import OAuthGrantSpec
from safeport.shared.schemas.config_params import ParamSpec
from safeport.shared.schemas.config_sources import OpenBaoAuth, OpenBaoServer, SourcesSection

REGENERATE = "sp policy reference > docs/reference/policy.md"


@dataclass(frozen=True)
class Section:
    """One table of gateway.toml as the page presents it."""

    header: str
    model: type[BaseModel]
    intro: str


SECTIONS = (
    Section("The file", GatewayPolicy, "The tables at the top of gateway.toml."),
    Section("[gateway]", GatewaySettings, "The gateway's own settings; every key is optional."),
    Section(
        "[approvals]",
        ApprovalsSettings,
        "How a yes is proven (see [Security keys](../guides/security-keys.md)).",
    ),
    Section("[callers]", Callers, "Absent, any process of your user may propose actions."),
    Section(
        "[[callers.rules]]",
        CallerRule,
        "One rule admits a process that matches every key it sets (an interpreter only with "
        '`interpreter = "any script"`).',
    ),
    Section(
        "[credentials.NAME]",
        Credential,
        "A credential the vault holds under NAME (`sp vault add NAME --kind KIND`).",
    ),
    Section(
        "[credentials.NAME.oauth]",
        OAuthGrantSpec,
        'An OAuth grant the gateway holds (`kind = "oauth"`); `sp oauth connect NAME` connects it.',
    ),
    Section("[sources]", SourcesSection, "Servers credentials may come from, besides the vault."),
    Section(
        "[sources.openbao.NAME]",
        OpenBaoServer,
        "An OpenBao or Vault server credentials may come from (docs/guides/teams-openbao.md).",
    ),
    Section(
        "[sources.openbao.NAME.auth]",
        OpenBaoAuth,
        "How the gateway logs in: an AppRole (its secret id in the local vault) or a token file.",
    ),
    Section("[ssh]", SshSection, "The SSH side."),
    Section("[ssh.hosts.NAME]", SshHost, "One SSH host, reached with a pinned host key."),
    Section(
        "[ssh.hosts.NAME.commands.NAME]",
        SshCommand,
        "One command an agent may ask to run: a fixed argv with validated `{param}` words.",
    ),
    Section("[http]", HttpSection, "The HTTPS side."),
    Section("[http.services.NAME]", HttpService, "One HTTPS API, reached with one credential."),
    Section(
        "[http.services.NAME.operations.NAME]",
        HttpOperation,
        "One request an agent may ask for: a fixed method and path with validated `{param}` parts.",
    ),
    Section("[sql]", SqlSection, "The PostgreSQL side."),
    Section(
        "[sql.databases.NAME]",
        SqlDatabase,
        "One PostgreSQL database, reached over TLS (verify-full, pinned CA) as one role.",
    ),
    Section(
        "[sql.databases.NAME.queries.NAME]",
        SqlQuery,
        "One read-only query an agent may ask for: a fixed statement with bound `{param}` values.",
    ),
    Section(
        "[remote]",
        RemoteSettings,
        "Remote MCP clients reached over HTTP (`sp context serve --http`); every key is optional.",
    ),
    Section(
        "[audit]",
        AuditSettings,
        "Where the journals' evidence goes besides the machine's own files; every key is optional.",
    ),
    Section(
        "[audit.timestamp]",
        TimestampSettings,
        "RFC 3161 time stamps of every signed checkpoint ([guide](../guides/timestamps.md)).",
    ),
    Section(
        "[[audit.timestamp.tsa]]",
        TsaSettings,
        "One time-stamping authority: its URL and the root its stamps must chain to.",
    ),
    Section(
        "params.NAME",
        ParamSpec,
        "The constraint on one `{NAME}` placeholder of a command, an operation or a query: exactly "
        "one of "
        '`pattern`, `enum` or `type = "int"`.',
    ),
)


class UndocumentedKey(ValueError):
    """A field of the policy models has no description or no example."""


def policy_reference() -> str:
    """The whole Markdown page."""
    lines = [
        "# Policy reference (`gateway.toml`)",
        "",
        f"<!-- Generated from the policy models; do not edit. Regenerate: `{REGENERATE}` -->",
        "",
        "Every key `gateway.toml` accepts, generated from the schema the gateway itself parses "
        "with. Names (`NAME`) are 1 to 64 letters, digits, `_`, `.` and `-`, starting with a "
        "letter or digit; param names are lowercase identifiers. An unknown key is refused "
        "with the nearest allowed one. How the pieces fit: [The policy](../guides/policy.md); "
        "ready-made services: [Recipes](../guides/recipes.md).",
        "",
    ]
    for section in SECTIONS:
        lines += _section(section)
        if section.model is OAuthGrantSpec:
            lines += preset_table()
    return "\n".join(lines).rstrip() + "\n"


def _section(section: Section) -> list[str]:
    schema = section.model.model_json_schema()
    properties = schema.get("properties", {})
    lines = [
        f"## `{section.header}`" if section.header != "The file" else "## The file",
        "",
        section.intro,
        "",
        "| key | type | default | meaning | example |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, field in section.model.model_fields.items():
        key = f"{section.model.__name__}.{name}"
        if not field.description:
            raise UndocumentedKey(f"{key} has no description")
        example = EXAMPLES.get(key)
        if example is None:
            raise UndocumentedKey(f"{key} has no example in authoring/policy_examples.py")
        cells = (
            f"`{name}`",
            type_words(properties.get(name, {}), schema.get("$defs", {})),
            _default(field.default, field.default_factory, field.is_required()),
            field.description,
            f"`{example}`",
        )
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return [*lines, ""]


def type_words(prop: dict[str, object], defs: dict[str, object]) -> str:
    """A JSON Schema property in words: "integer, 1 to 3600", "one of "GET", "POST""…"""
    options = prop.get("anyOf")
    if isinstance(options, list):
        kept = [option for option in options if option != {"type": "null"}]
        return " or ".join(type_words(option, defs) for option in kept)
    ref = prop.get("$ref")
    if isinstance(ref, str):
        return "table"
    enum = prop.get("enum")
    if isinstance(enum, list):
        return "one of " + ", ".join(json.dumps(value) for value in enum)
    if "const" in prop:
        return json.dumps(prop["const"])
    kind = prop.get("type")
    if kind in ("integer", "number"):
        return ("integer" if kind == "integer" else "number") + _range(prop)
    if kind == "boolean":
        return "true or false"
    if kind == "string":
        return "text" + _text_bounds(prop)
    if kind == "array":
        items = prop.get("items")
        inner = type_words(items, defs) if isinstance(items, dict) else "values"
        return ("non-empty " if prop.get("minItems") else "") + f"list of {inner}"
    if kind == "object":
        by_pattern = prop.get("patternProperties")
        named = list(by_pattern.values()) if isinstance(by_pattern, dict) else []
        value = named[0] if named else prop.get("additionalProperties")
        if isinstance(value, dict) and "$ref" in value:
            return "tables by name"
        if isinstance(value, dict):
            return f"table of {type_words(value, defs)}"
        return "JSON object"
    return "any value"


def _range(prop: dict[str, object]) -> str:
    low = prop.get("minimum")
    above = prop.get("exclusiveMinimum")
    high = prop.get("maximum")
    if low is not None and high is not None:
        return f", {low} to {high}"
    parts = [f"above {above}" if above is not None else "", f"at most {high}" if high else ""]
    parts += [f"at least {low}" if low is not None else ""]
    shown = ", ".join(part for part in parts if part)
    return f", {shown}" if shown else ""


def _text_bounds(prop: dict[str, object]) -> str:
    pattern = prop.get("pattern")
    longest = prop.get("maxLength")
    if pattern is not None:
        return f" matching `{pattern}`"
    if longest is not None:
        return f", at most {longest} characters"
    if prop.get("minLength"):
        return ", not empty"
    return ""


def _default(value: object, factory: object, required: bool) -> str:
    if required:
        return "required"
    if callable(factory):
        made = factory()
        return "every key at its default" if isinstance(made, BaseModel) else f"`{made}`"
    if value is None or value is PydanticUndefined:
        return "unset"
    return f"`{json.dumps(value)}`"


def _cell(text: str) -> str:
    # A line break ends the row; a pipe inside a code span does not end the cell for the docs'
    # Markdown, and every pipe here is in one (a pattern, an example).
    return text.replace("\n", " ")

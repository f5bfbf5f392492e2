"""The structured outputs of the workspace tools (their JSON Schemas are what clients see)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, PrivateAttr
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

BlockedReason = Literal["private", "ignored", "out-of-scope", "binary", "unreadable-type"]


def inline_items(field: str, item: type[BaseModel]) -> Callable[[dict[str, Any]], None]:
    """Inline a list field's item schema instead of a `$ref`.

    Clients validate every structured result against the output schema; resolving a `$ref`
    per list item costs about a third of a long listing's validation time.
    """

    def patch(schema: dict[str, Any]) -> None:
        schema["properties"][field]["items"] = item.model_json_schema()

    return patch


def nullable_as_type_list(field: dict[str, Any]) -> None:
    """Write an optional scalar field's ``anyOf: [{type: T}, {type: null}]`` as ``type: [T,
    "null"]``: the same values, but a client validating with the Python SDK (jsonschema) checks
    a type list in place, where ``anyOf`` costs it one subschema per option, on every result.
    Anything richer than a bare type (a reference, an enum, bounds) keeps its ``anyOf``."""
    options = field.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return
    other = options[1] if options[0] == {"type": "null"} else options[0]
    if isinstance(other, dict) and other.keys() == {"type"} and isinstance(other["type"], str):
        del field["anyOf"]
        field["type"] = [other["type"], "null"]


class Described(BaseModel):
    """A model in a tool's output schema, its optional scalars written as type lists."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        for field in handler.resolve_ref_schema(schema).get("properties", {}).values():
            nullable_as_type_list(field)
        return schema


class ToolResult(Described):
    """A tool's structured output, serialised once: the JSON that measures what was served for
    the journal is the structured content on the wire and its text copy too."""

    _wire: str | None = PrivateAttr(default=None)

    def wire_json(self) -> str:
        if self._wire is None:
            self._wire = self.model_dump_json()
        return self._wire


class RootInfo(Described):
    name: str = Field(
        description="Use this name as the first path component when several roots are served."
    )


class RootsResult(ToolResult):
    roots: list[RootInfo]
    path_rules: str
    policy: dict[str, object]


NAME_GROUPS = ("directories", "symlinks", "others")


def _untyped_per_entry(schema: dict[str, Any]) -> None:
    """The groups' schemas without a schema per entry (see :class:`EntryGroups`)."""
    groups = schema["properties"]
    groups["files"].pop("additionalProperties", None)
    for name in NAME_GROUPS:
        groups[name].pop("items", None)


# A listing's entries are grouped by type, each a name (or path) with at most one typed value:
# clients validate every structured result against the output schema, per item and per
# keyword, so an entry that is one string, or one name with one integer, validates about four
# times faster than an object of four typed members (and its JSON is a third of the size).
# Every name appears in exactly one type group; ``blocked`` says why an entry cannot be read.
# The groups that hold the entries (``files`` and the lists of names) are described and not
# typed per entry in the schema clients see: a client validating with the Python SDK
# (jsonschema) spends about 4.5 µs on each entry's subschema (``items``,
# ``additionalProperties``), which was most of what a 100-entry listing cost it, for names and
# integers the server's own model already guarantees. ``blocked``, small, keeps its enum.
class EntryGroups(ToolResult):
    """What a listing and a tree share: the entries by type, and why some cannot be read."""

    model_config = ConfigDict(json_schema_extra=_untyped_per_entry)

    path: str
    files: dict[str, int] = Field(
        description="Regular files, name: size in bytes as an integer (0 where the size is "
        "not shown)."
    )
    directories: list[str] = Field(description="Folders, each a name (a string).")
    symlinks: list[str] = Field(
        description="Symbolic links the policy lets through, each a name (a blocked link is "
        "in others)."
    )
    others: list[str] = Field(
        description="Everything else, each a name: special files, blocked links, and private "
        "names (listed, never looked at)."
    )
    blocked: dict[str, BlockedReason] = Field(
        description="Entries of any group that cannot be read, name: why. "
        "An entry not named here can be read (a folder: listed)."
    )


class DirectoryListing(EntryGroups):
    """One page of a folder, keyed by name, each group in name order."""

    next_cursor: str | None = Field(default=None, description="Pass back to get the next page.")
    total_entries: int


class DirectoryTree(EntryGroups):
    """A bounded tree, keyed by path (a path's depth is its number of parts below ``path``),
    each group in the order the tree was walked: a folder, then what it holds."""

    truncated: bool
    max_depth: int
    max_entries: int


class Redaction(Described):
    """A secret withheld from the text served: its kind and lines, never its value."""

    kind: str
    line: int
    end_line: int


REDACTED = (
    "Secrets found in the text, each replaced by [REDACTED:<kind>] on the lines named "
    "(kind and lines only; the value is never served)."
)


class FileContent(ToolResult):
    path: str
    text: str
    truncated: bool
    total_bytes: int
    served_bytes: int
    next_line: int | None = Field(
        default=None, description="When truncated: continue with read_file_excerpt(start_line=…)."
    )
    hint: str | None = None
    redacted: int = Field(default=0, description="How many secrets were withheld.")
    redactions: list[Redaction] = Field(default_factory=list, description=REDACTED)


class FileExcerpt(ToolResult):
    path: str
    start_line: int
    start_column: int
    lines: list[str]
    end_of_file: bool
    next_line: int | None = None
    next_column: int | None = Field(
        default=None, description="When a long line was split: continue at this column."
    )
    next_cursor: str | None = Field(
        default=None,
        description="Pass back as `cursor` with start_line=next_line and "
        "start_column=next_column to continue without rescanning the file.",
    )
    hint: str | None = None
    redacted: int = Field(default=0, description="How many served lines had a secret withheld.")
    redactions: list[Redaction] = Field(default_factory=list, description=REDACTED)


class MultiFileItem(Described):
    path: str
    ok: bool
    content: FileContent | None = None
    error: str | None = None


class MultipleFiles(ToolResult):
    files: list[MultiFileItem]


class FileInfo(ToolResult):
    path: str
    type: Literal["file", "directory", "other"]
    size: int
    modified: str
    changed: str
    created: str | None = None
    readable: bool
    blocked: BlockedReason | None = None
    sha256: str | None = None


class FileMatches(ToolResult):
    pattern: str
    matches: list[str]
    truncated: bool


class SearchHit(Described):
    path: str
    line: int
    snippet: str


class SearchResults(ToolResult):
    model_config = ConfigDict(json_schema_extra=inline_items("hits", SearchHit))

    query: str
    hits: list[SearchHit]
    next_cursor: str | None = None
    method: Literal["index", "scan"]
    index_state: str


class ChangeItem(Described):
    seq: int
    kind: Literal["added", "modified", "removed", "recent"]
    path: str
    modified: str | None = None
    size: int | None = None


class ChangeFeedPage(ToolResult):
    changes: list[ChangeItem]
    cursor: str = Field(description="Pass back to get only what changed after this page.")
    more: bool
    reset: bool = Field(
        description="True when the cursor came from another server instance: "
        "this page lists recent files instead."
    )


class DeepResearchItem(Described):
    id: str
    title: str
    url: str


class DeepResearchResults(ToolResult):
    results: list[DeepResearchItem]


class DeepResearchDocument(ToolResult):
    id: str
    title: str
    text: str
    url: str
    metadata: dict[str, object] | None = None


class AuditEntry(Described):
    seq: int | None = None
    time: str | None = None
    origin: str | None = None
    tool: str | None = None
    args: dict[str, object] | None = None
    bytes: int | None = None
    denied: bool | None = None
    reason: str | None = None


class AuditTrail(ToolResult):
    entries: list[AuditEntry]
    journal: str = "reads"


class Health(ToolResult):
    status: Literal["ok", "degraded"]
    roots: int
    index_state: str
    index_walk: str = Field(
        default="idle",
        description="What the index's walk is doing: idle, checking what changed (stat "
        "only), walking what changed, walking everything, or yielding to requests.",
    )
    index_files: int
    index_bytes: int
    index_last_refresh: str | None
    index_error: str | None
    journal_records_written: int
    secrets_redacted: int = Field(
        default=0, description="Secrets withheld from reads this server instance served."
    )
    redaction_off: list[str] = Field(
        default_factory=list,
        description="Roots whose files are served without secret redaction (the user's choice).",
    )
    policy: dict[str, object]
    instance: str

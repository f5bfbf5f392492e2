"""The catalog the gateway serves on agent.sock: what an agent may propose.

Names, descriptions, param schemas and approval scope; never an address, a user, a URL or a
secret. The gateway builds it from the accepted policy; the context server parses it with the
same models to describe its tools.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from safeport.shared.schemas.wire import ArgName, Identifier


class _Entry(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_by_name=True, serialize_by_alias=True
    )

    @model_serializer(mode="wrap")
    def _leave_out_absent(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Absent constraints are left out, as in a hand-written JSON Schema (inside a reply
        too, where the catalog is one field of the envelope)."""
        data = handler(self)
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


class IntegerParam(_Entry):
    """A JSON Schema fragment for an ``int`` param."""

    type: Literal["integer"] = "integer"
    minimum: int | None = None
    maximum: int | None = None


class StringParam(_Entry):
    """A JSON Schema fragment for a string param: its length bound and one constraint."""

    type: Literal["string"] = "string"
    max_length: int = Field(alias="maxLength", ge=1)
    enum: list[str] | None = None
    pattern: str | None = None


ParamSchema = Annotated[IntegerParam | StringParam, Field(discriminator="type")]
Approval = Literal["session", "per-call"]


class SshCatalogEntry(_Entry):
    action: Literal["ssh_exec"] = "ssh_exec"
    host_id: Identifier
    command_id: Identifier
    description: str
    read_only: bool
    approval: Approval
    params: dict[ArgName, ParamSchema]

    @property
    def target(self) -> str:
        return self.host_id

    @property
    def operation(self) -> str:
        return self.command_id


class HttpCatalogEntry(_Entry):
    action: Literal["http_request"] = "http_request"
    service_id: Identifier
    operation_id: Identifier
    method: str
    description: str
    read_only: bool
    approval: Approval
    params: dict[ArgName, ParamSchema]

    @property
    def target(self) -> str:
        return self.service_id

    @property
    def operation(self) -> str:
        return self.operation_id


class SqlCatalogEntry(_Entry):
    action: Literal["run_readonly_query"] = "run_readonly_query"
    database: Identifier
    query: Identifier
    description: str
    read_only: bool
    approval: Approval
    params: dict[ArgName, ParamSchema]
    columns: list[str] = Field(description="the result columns returned")

    @property
    def target(self) -> str:
        return self.database

    @property
    def operation(self) -> str:
        return self.query


CatalogEntry = Annotated[
    SshCatalogEntry | HttpCatalogEntry | SqlCatalogEntry, Field(discriminator="action")
]


class Catalog(_Entry):
    """The result of a ``catalog`` request."""

    policy: str
    actions: list[CatalogEntry]

    def wire_form(self) -> dict[str, Any]:
        """As sent: absent constraints are left out, as in a hand-written JSON Schema."""
        return self.model_dump(mode="json")

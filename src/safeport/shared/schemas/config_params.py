"""A `params` table of gateway.toml: one argument's constraint, and the `{name}` templates that
refer to it.

SSH commands, HTTPS operations and SQL queries all declare their arguments this way, so the
constraint lives below every module that declares them (none of them imports another for it).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, StrictInt, model_validator

from safeport.shared.schemas.config_gateway import PolicyTable as _Strict

ParamName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
# `{name}` in an argv, path, query or body template; anything else (`${HOME}`) is literal text.
PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]{0,63})\}")


class ParamSpec(_Strict):
    """One argument's constraint: exactly one of pattern, enum, or int with bounds."""

    pattern: str | None = None
    """A regular expression the whole value must match (anchor it: `^…$`)."""
    enum: list[str] | None = None
    """The only values allowed."""
    type: Literal["str", "int"] = "str"
    """"int" makes the value an integer, bounded by `min` and `max`."""
    min: StrictInt | None = None
    """The smallest integer allowed (with `type = "int"`)."""
    max: StrictInt | None = None
    """The largest integer allowed (with `type = "int"`)."""
    max_length: Annotated[int, Field(ge=1, le=4096)] = 256
    """The longest string value allowed, in characters."""

    @model_validator(mode="after")
    def _one_constraint(self) -> ParamSpec:
        kinds = [self.pattern is not None, self.enum is not None, self.type == "int"]
        if sum(kinds) != 1:
            raise ValueError('a param needs exactly one of `pattern`, `enum` or `type = "int"`')
        if self.type != "int" and (self.min is not None or self.max is not None):
            raise ValueError('`min`/`max` only apply to `type = "int"`')
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"`pattern` is not a valid regular expression: {exc}") from exc
        if self.enum is not None and not self.enum:
            raise ValueError("`enum` must list at least one value")
        return self


def check_placeholders(used: set[str], params: dict[str, ParamSpec], where: str) -> None:
    """Every `{name}` a template uses is declared, and every declared param is used."""
    undeclared = used - set(params)
    if undeclared:
        raise ValueError(f"{where} uses undeclared params: {sorted(undeclared)}")
    unused = set(params) - used
    if unused:
        raise ValueError(f"params declared but never used in {where}: {sorted(unused)}")


def json_placeholders(value: object) -> set[str]:
    """The `{name}`s in every string of a JSON body, however deep."""
    if isinstance(value, str):
        return set(PLACEHOLDER.findall(value))
    if isinstance(value, dict):
        return set().union(*(json_placeholders(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(json_placeholders(v) for v in value)) if value else set()
    return set()

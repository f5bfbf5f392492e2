"""The `[audit]` table of gateway.toml: RFC 3161 time stamps of the signed checkpoints.

```toml
[audit.timestamp]
stale_after_minutes = 120

[[audit.timestamp.tsa]]
url = "http://timestamp.example/tsr"
ca_file = "/etc/safeport/tsa-root.pem"
```
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from pydantic import Field, model_validator

from safeport.shared.schemas.config_gateway import PolicyTable


class TsaSettings(PolicyTable):
    url: Annotated[str, Field(min_length=8, max_length=2048)]
    """The authority's http(s) URL; its answers are signed, so plain http is as safe."""
    ca_file: Annotated[str, Field(min_length=1, max_length=4096)] | None = None
    """A PEM file with the root (or the TSA's own certificate) its stamps must chain to."""
    ca_pem: Annotated[str, Field(min_length=1, max_length=65536)] | None = None
    """The same root pasted inline as PEM (instead of ``ca_file``)."""

    @model_validator(mode="after")
    def _one_root_and_a_plain_url(self) -> TsaSettings:
        if (self.ca_file is None) == (self.ca_pem is None):
            raise ValueError("a TSA needs exactly one of `ca_file` and `ca_pem`")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("a TSA `url` must be http:// or https:// with a host")
        if parts.username is not None or parts.password is not None or parts.fragment:
            raise ValueError("a TSA `url` carries no user, password or fragment")
        return self


class TimestampSettings(PolicyTable):
    tsa: Annotated[list[TsaSettings], Field(min_length=1, max_length=4)]
    """The time-stamping authorities asked, each for every checkpoint whose journal moved."""
    timeout_s: Annotated[int, Field(ge=1, le=60)] = 10
    """Seconds one request to an authority may take (it never delays an action)."""
    stale_after_minutes: Annotated[int, Field(ge=1, le=10080)] = 60
    """`sp status` and `sp doctor` warn when a checkpoint waits longer than this for its stamp."""


class AuditSettings(PolicyTable):
    timestamp: TimestampSettings | None = None
    """RFC 3161 time stamps of each signed checkpoint (absent: none are asked for)."""

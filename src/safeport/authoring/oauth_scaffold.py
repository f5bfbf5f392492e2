"""`sp policy add http --oauth PRESET`: the `oauth` credential a service acts with, from a preset.

The preset's name, client authentication and default scopes are written out in the table, not
left implicit, so the human reads on the policy's diff what the grant will be asked for and
narrows the scopes before `sp policy accept`. A credential already declared is reused only when
it is an `oauth` one: a token credential under the name would make the service act with
something other than the grant the command was asked to write.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass

from safeport.action_gateway.oauth.presets import PRESETS, Preset
from safeport.authoring.toml_keys import table_key
from safeport.errors import ConfigError


@dataclass(frozen=True)
class OAuthDraft:
    """What the human chose: a preset of the catalogue, their client's id, maybe other scopes."""

    preset: str
    client_id: str
    scopes: tuple[str, ...] = ()  # empty: the preset's default scopes


def preset_named(name: str) -> Preset:
    """The catalogue's entry ``name``; an unknown name is refused with the names there are."""
    found = PRESETS.get(name)
    if found is None:
        known = ", ".join(sorted(PRESETS))
        raise ConfigError(
            f"--oauth {name!r} is not a preset; the presets are: {known}",
            hint="another provider: declare [credentials.NAME.oauth] with its issuer by hand",
        )
    return found


def oauth_credential_lines(text: str, name: str, draft: OAuthDraft) -> list[str]:
    """The `[credentials.NAME]` and `[credentials.NAME.oauth]` tables, or none when ``text``
    already declares an oauth credential ``name``."""
    preset = preset_named(draft.preset)
    declared = _declared_kind(text, name)
    if declared == "oauth":
        return []
    if declared is not None:
        raise ConfigError(
            f"credential {name!r} is already declared with kind {declared!r}, not an oauth grant",
            hint="name another with --credential NAME; nothing was written",
        )
    scopes = draft.scopes or preset.default_scopes
    said = "" if draft.scopes else "   # the preset's defaults: ask for no more than you need"
    return [
        f"[credentials.{table_key(name)}]   # connect it once accepted: `sp oauth connect {name}`",
        'kind = "oauth"',
        'approval = "per-call"',
        "",
        f"[credentials.{table_key(name)}.oauth]",
        f"preset = {json.dumps(preset.name)}   # {preset.title}",
        f"client_id = {json.dumps(draft.client_id)}",
        f"client_auth = {json.dumps(preset.client_auth)}",
        f"scopes = {json.dumps(list(scopes))}{said}",
        "",
    ]


def _declared_kind(text: str, name: str) -> str | None:
    """The kind of credential ``name`` in ``text`` however it is written (a header, an inline
    table, dotted keys); "" when it is declared without a readable kind, None when it is not."""
    try:
        credentials = tomllib.loads(text).get("credentials", {})
    except tomllib.TOMLDecodeError:
        return None  # the text with the new tables is parsed before it is written, and fails
    table = credentials.get(name) if isinstance(credentials, dict) else None
    if table is None:
        return None
    kind = table.get("kind") if isinstance(table, dict) else None
    return kind if isinstance(kind, str) else ""

"""The table of OAuth presets on the policy reference, generated from the catalogue itself.

Each row is what `preset = "NAME"` brings to a `[credentials.NAME.oauth]` table: the endpoints,
the default scopes, the client authentication and the provider's quirks in words. A quirk added
to the catalogue without words here fails the page's generation, as an undocumented key does.
"""

from __future__ import annotations

from safeport.action_gateway.oauth import presets
from safeport.action_gateway.oauth.presets import PRESETS, Preset

QUIRK_WORDS = {
    presets.FORM_ENCODED_TOKEN_RESPONSE: "answers a form unless asked for JSON",
    presets.SCOPE_SEPARATOR_COMMA: "scopes joined with commas",
    presets.OFFLINE_ACCESS_SCOPE: "a refresh token only with the `offline_access` scope",
    presets.ACCESS_TYPE_OFFLINE: "a refresh token only with `access_type=offline` and "
    "`prompt=consent` (both sent)",
    presets.NO_REFRESH_TOKEN: "may issue an access token that never expires and no refresh token",
    presets.AUDIENCE: f"`audience={presets.ATLASSIAN_AUDIENCE}` and `prompt=consent` sent",
    presets.OK_FIELD: 'errors come as HTTP 200 with `"ok": false`',
    presets.TOKEN_TYPE_BOT_OR_USER: 'token type "bot" or "user", sent as a bearer token',
}


class UndescribedQuirk(ValueError):
    """A preset's quirk has no words on the page."""


def preset_table() -> list[str]:
    """The section's Markdown lines, one row per preset in the catalogue's order."""
    lines = [
        "## OAuth presets",
        "",
        'What `preset = "NAME"` brings to `[credentials.NAME.oauth]`; a key you set there '
        "(endpoints, `scopes`, `client_auth`) overrides it. A provider with discovery metadata "
        "(RFC 8414 or OpenID Connect) needs no preset: give its `issuer`. "
        "`sp policy add http NAME --oauth PRESET` writes a service with one of these.",
        "",
        "| preset | provider | device flow | revocation | default scopes | client auth | quirks |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for preset in PRESETS.values():
        lines.append("| " + " | ".join(_row(preset)) + " |")
    return [*lines, ""]


def _row(preset: Preset) -> tuple[str, ...]:
    return (
        f"`{preset.name}`",
        f"[{preset.title}]({preset.docs_url})",
        "yes" if preset.device_authorization_endpoint else "no",
        "RFC 7009" if preset.revocation_endpoint else "none",
        " ".join(f"`{scope}`" for scope in preset.default_scopes),
        f'`"{preset.client_auth}"`',
        "; ".join(_quirk(preset, quirk) for quirk in sorted(preset.quirks)) or "none",
    )


def _quirk(preset: Preset, quirk: str) -> str:
    words = QUIRK_WORDS.get(quirk)
    if words is None:
        raise UndescribedQuirk(f"preset {preset.name}: quirk {quirk!r} has no words")
    return words

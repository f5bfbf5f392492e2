"""Writing gateway.toml: the policy reference generated from the schema, the commented example
`sp init` writes, the services and hosts `sp policy add` scaffolds, the entries `sp policy remove`
cuts out, and operations imported from an OpenAPI description. Only the CLI imports it."""

__all__ = [
    "oauth_scaffold",
    "openapi_import",
    "reference",
    "removal",
    "scaffold",
    "starter",
    "toml_keys",
]

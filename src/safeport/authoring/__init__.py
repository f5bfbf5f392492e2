"""Writing gateway.toml: the policy reference generated from the schema, the commented example
`sp init` writes, and the services and hosts `sp policy add` scaffolds. Only the CLI imports it."""

__all__ = [
    "reference",
    "scaffold",
    "starter",
]

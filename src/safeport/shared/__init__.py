"""Code both processes import: contracts, framing, journals, locations. It holds no secret.

Its public surface is its modules (each one job, loaded only by those who need it): other
packages import ``safeport.shared.<module>`` for a module listed here, and nothing else.
"""

__all__ = [
    "audit",
    "environment",
    "exact_urls",
    "exception_summary",
    "findings",
    "folder_sync",
    "gateway_socket",
    "grant_tokens",
    "http_deadline",
    "install_file",
    "jsonc",
    "known_secrets",
    "launch",
    "outside_json",
    "paths",
    "peer_credentials",
    "platform_support",
    "provenance",
    "schemas",
    "secret_scan",
    "setup_state",
    "sql_statement",
    "text_lines",
    "undumpable",
    "visible_text",
    "wire",
]

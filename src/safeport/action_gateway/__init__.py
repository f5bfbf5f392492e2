"""The action gateway: the only process that holds credentials and acts on them.

One room per concept, importing in one direction (bottom first; ``tests/test_import_edges.py``
holds the order): ``identity``, ``evidence`` and ``install`` know nothing of the rest;
``policy`` reads the accepted gateway.toml; ``sockets`` frames and budgets connections;
``executors`` run fixed-vector SSH and HTTPS actions; ``oauth`` is the OAuth client of the
grants the vault holds; ``approvals`` asks the human; ``ladder``
decides each proposal rung by rung; ``core`` holds the gateway's state; ``handlers`` answer
each socket's operations; ``daemon`` assembles and runs it all.

What the CLI may import without loading the server is listed here; `sp`'s client side of a
running gateway is the separate package ``safeport.gateway_client``.
"""

__all__ = [
    "daemon",
    "executors",
    "identity",
    "install",
    "oauth",
    "policy",
]

"""How long a harness waits for a real server it started to come up.

Each wait returns the moment the server answers and fails at once when its process exits, so
the bound only matters for a server that is alive but slow: on a loaded two-core CI machine, with
both test workers starting PostgreSQL, OpenBao, sshd and node at once, a start that takes half a
second alone has taken over twenty. A generous bound costs nothing when a start succeeds.
"""

START_S = 120.0

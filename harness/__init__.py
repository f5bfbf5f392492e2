"""Real parts and stand-ins that tests and benchmarks both drive: a gateway process with an
in-memory vault, requesters, an OpenSSH server, a TLS server, raw MCP clients and the load
drills. It sits beside ``tests/`` and ``benchmarks/`` and imports neither (a test pins it), so a
benchmark never depends on the test suite.
"""

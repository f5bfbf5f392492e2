"""OAuth grants the gateway holds: it is the OAuth client of a service's authorization server.

``presets`` (the catalogue), ``endpoints`` (discovery and overrides), ``protocol`` and
``responses`` (PKCE, state, iss, token and device answers) decide without I/O; ``transport`` is
the one place that talks to a provider, and ``client`` runs each grant's steps over it.
``broker`` holds the grants' access tokens in memory and refreshes them one at a time;
``flows`` keeps the connects under way and ``clients`` each grant's client.

Other packages may read the catalogue, the callback's parsing and the errors (`sp` shows presets
and relays a browser's callback); the client and the transport, which send secrets, are the
gateway's own.
"""

__all__ = [
    "errors",
    "presets",
    "protocol",
]

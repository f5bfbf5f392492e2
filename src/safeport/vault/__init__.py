"""The encrypted credential store. Only the gateway process (and `sp` on the file when no gateway
runs) imports this package; the context server never does (a test pins it)."""

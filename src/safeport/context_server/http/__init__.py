"""The context server over Streamable HTTP for remote clients: the resource server that checks
the gateway's access tokens, the relay of the gateway's authorization endpoints, and the
transport's own guards (Host/Origin, sizes, time, rate)."""

__all__ = []

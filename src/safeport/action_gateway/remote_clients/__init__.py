"""The gateway as the OAuth 2.1 authorization server of remote MCP clients (the desktop tunnel):
client metadata documents and registration, the human's approval on a card, codes with PKCE,
signed access tokens, rotating refresh tokens, revocation, and the book of known clients."""

__all__ = []

"""OAuth grants the gateway holds: connecting them, refreshing their tokens, revoking them."""

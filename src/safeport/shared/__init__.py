"""Code both processes import: contracts, framing, journals, locations. It holds no secret."""

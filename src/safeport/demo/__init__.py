"""`sp demo`: a self-contained end-to-end run on an embedded default configuration."""

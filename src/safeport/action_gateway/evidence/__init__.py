"""What the gateway writes down: the hash-chained journals, sealed bodies, signed
checkpoints and their syslog copies, what a restart finds, the refusal budget and the disk
reserve that keep a requester from making the gateway write without bound."""

__all__ = []

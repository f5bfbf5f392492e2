"""The action gateway: the only process that holds credentials and acts on them."""

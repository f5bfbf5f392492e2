"""A labelled corpus of secrets and look-alikes, generated fresh on every run (see corpus.py)."""

"""Vectorised (numpy) node state and the hot filters/scores of the default profile."""

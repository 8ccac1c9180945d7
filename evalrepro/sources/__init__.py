"""Repo sources: where an instance's repository history comes from."""

"""Targets: what produces the patches under evaluation."""

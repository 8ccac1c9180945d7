"""Publish: verify a run, bundle it, check and reproduce a bundle."""

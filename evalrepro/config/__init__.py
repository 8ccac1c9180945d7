"""The user's configuration: composed by Hydra, validated by pydantic."""

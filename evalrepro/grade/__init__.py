"""Grade: a test log becomes a status map, an observation, a score."""

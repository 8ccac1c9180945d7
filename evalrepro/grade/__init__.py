"""Grade: a test log becomes a status map, an observation, a score; beside them, what an
observation is checked with (canaries, fresh runs, re-runs), drawn and judged here."""

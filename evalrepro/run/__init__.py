"""Run: executors schedule each trial's attempts on a runtime, the host records them
(the recorder, the run directory); the agent phase before an agent's tests."""

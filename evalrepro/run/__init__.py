"""Execute: executors schedule attempts, runtimes run them, the host records them."""

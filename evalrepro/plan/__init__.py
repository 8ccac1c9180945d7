"""Plan and lock: the experiment resolved into trials, frozen into a lockfile."""

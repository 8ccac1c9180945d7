"""Dataset validation: test lists derived by running each instance's tests before and after
its gold patch, repeated, and the instances that can never be resolved found."""

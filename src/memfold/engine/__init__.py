"""Use cases: the only layer that combines workspace, index and providers."""

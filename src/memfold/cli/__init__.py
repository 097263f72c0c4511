"""The ``memfold`` command line."""

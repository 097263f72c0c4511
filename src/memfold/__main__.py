"""``python -m memfold`` runs the command line."""

from memfold.cli.main import main

main()

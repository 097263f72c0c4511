"""Call forms of other memory libraries over memfold (``memfold.compat.mem0``)."""

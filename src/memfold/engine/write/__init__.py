"""The write path: ``write.WritePath`` (add: extraction, dedupe and merge, forget requests, todos
closed by what the user says), edits and deletes (``edit``, ``text_edit``), conversation files
read for ingestion (``conversations``) and the write-ahead vector worker (``vector_worker``)."""

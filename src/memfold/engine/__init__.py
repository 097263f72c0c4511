"""The memory engine, in rooms by responsibility: ``storage`` (records, the crash-safe commit of
files then index, the input guard, purge, pins), ``read`` (retrieval and its ranking signals),
``llm`` (the LLM calls of the write path), ``write`` (add, dedupe, merge, edits, forgets, todos)
and ``conversation`` (sessions, their context window, summaries, session ends). The ``Memory``
facade (``memfold.facade``) wires them; maintenance builds on ``storage`` and never the reverse."""

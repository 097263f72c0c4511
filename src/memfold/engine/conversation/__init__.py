"""Conversations with an agent: ``session.Session`` (messages, the context window built from
memory, summaries of what scrolled out, a task scratchpad), what a session needs of the memory
(``ports``) and the end of a session (``session_end``)."""

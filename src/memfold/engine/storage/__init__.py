"""The memories at rest: records and their file lines (``records``), one namespace's files and
index kept in step with the crash-safe commit (``store``), the guard every input passes
(``guard``), deletion with everything derived from it (``purge``), pinned memories (``pin``) and
the language of a user's files (``user_language``)."""

"""Pure text functions: keyword terms, memory-file Markdown, secrets, tokens. No I/O."""

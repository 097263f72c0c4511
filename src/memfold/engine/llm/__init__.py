"""The LLM calls of the write path: the per-operation call budget and usage record
(``llm_calls``), extraction of memories from a conversation (``llm_extract``) and the write
steps that use them (``llm_write``). Without a chat model the write path stays deterministic."""

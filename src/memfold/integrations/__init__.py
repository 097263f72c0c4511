"""Framework adapters over memfold, each an extra: ``langgraph``, ``langchain``, ``llamaindex``, ``openai-agents``."""

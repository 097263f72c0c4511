"""The HTTP adapter: a FastAPI app over ``Memory`` (``memfold serve``), API keys, the web page."""

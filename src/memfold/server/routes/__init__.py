"""The HTTP routes, one module per resource; each only parses, calls the engine and returns a model."""

"""The ``Memory`` facade (and ``AsyncMemory``): wires workspace, index, providers, the engine's
rooms and maintenance from the settings. It sits above both the engine and maintenance: the
engine never imports it, maintenance reaches the memory only through ``maintenance.base.Host``."""

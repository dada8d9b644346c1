"""Harnesses: how an executable node's work is done (embedded agents, Python callables,
agent CLIs, OpenAI-compatible endpoints), chosen per node by the runtime plan."""

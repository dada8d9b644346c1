"""Trivial workers: admission only needs them to import and be callable."""

NOT_CALLABLE = 42


def noop(value):
    return None

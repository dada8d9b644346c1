"""Admission: every check a graph must pass before a controller starts or a worker is contacted."""

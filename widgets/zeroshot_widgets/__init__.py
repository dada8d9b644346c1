"""Notebook widgets for the zeroshot workbench (ipywidgets 8 + matplotlib).

Kept apart from ``zeroshot_kernel`` so that the engine never imports UI libraries.
"""

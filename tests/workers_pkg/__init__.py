"""Importable python workers used by admission and engine tests."""

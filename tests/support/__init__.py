"""Test kit: what only the tests use (running notebooks in-process, building classes)."""

"""TEST DOUBLE package (see executorch/__init__.py)."""

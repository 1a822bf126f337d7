"""shoe-controller's test kit: the harnesses and helpers its tests and benches share.

A distribution of its own (tests/support/pyproject.toml), installed beside the product by the
README's test command and never part of the product's wheel or Debian package
(tests/package/test_wheel.py checks the wheel's file list).
"""

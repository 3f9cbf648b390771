"""Helpers shared by several test suites (import as `tests.support.<module>`)."""

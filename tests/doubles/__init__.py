"""Test doubles shared by the project's tests; each is named as a double and documents what it replaces."""

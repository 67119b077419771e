"""The package version, in a module of its own so the lowest layers can state it."""

__version__ = "0.1.0"

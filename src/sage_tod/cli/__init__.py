"""The `sage-tod` command line: thin command modules that parse options and call one function."""

from sage_tod.cli.app import app, main

__all__ = ["app", "main"]

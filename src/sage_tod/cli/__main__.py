"""`python -m sage_tod.cli`."""

from sage_tod.cli.app import main

main()

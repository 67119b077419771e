"""Agent logs in: turn an agent's own log into sage-tod turns (docs/logs.md).

`import_file(format, path, spec)` reads one log file of a registered format
(`available_formats()`); the result's turns are the public turns format and
its counts say what was read, skipped and ignored.
"""

from sage_tod.importers.base import (
    FORMATS,
    ImportResult,
    Skipped,
    UnknownFormat,
    available_formats,
    get_importer,
    import_file,
)

__all__ = ["FORMATS", "ImportResult", "Skipped", "UnknownFormat", "available_formats",
           "get_importer", "import_file"]

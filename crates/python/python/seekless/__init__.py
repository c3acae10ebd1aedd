"""Offline Have I Been Pwned password checks: seekless indexes from Python.

``PwnedIndex(path)`` opens an index built by ``seekless pwned update`` or
``seekless pwned prepare`` once, memory-mapped and shared by every thread;
each lookup reads one 4 KiB page.
"""

from ._seekless import CorruptIndexError, PwnedIndex

__all__ = ["CorruptIndexError", "PwnedIndex"]

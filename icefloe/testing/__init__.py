"""Fakes and helpers for testing code that uses icefloe (importable by users too)."""

from icefloe.testing._fileio import CountingFileIO

__all__ = ["CountingFileIO"]

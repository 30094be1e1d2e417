"""Fakes and helpers for testing code that uses icefloe (importable by users too)."""

from icefloe.testing._faults import CommitFault, CommitRecord, FaultInjectingCatalog
from icefloe.testing._fileio import CountingFileIO

__all__ = ["CommitFault", "CommitRecord", "CountingFileIO", "FaultInjectingCatalog"]

"""Command-line entry points (``python -m icefloe.cli <command>``)."""

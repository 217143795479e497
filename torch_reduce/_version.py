"""The package version, in one place: setup.py reads it, torch_reduce.__version__ re-exports it."""

__version__ = "0.1.0"

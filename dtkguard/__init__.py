"""dtkguard: keep Hygon DTK/DAS vendor builds intact in Python environments."""

__version__ = "0.1.0"

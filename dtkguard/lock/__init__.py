"""PEP 751 locks: read, write, export."""

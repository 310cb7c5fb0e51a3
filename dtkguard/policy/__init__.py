"""Policies: the TOML model, loading with file:line errors, DTK labels, the compiled form."""

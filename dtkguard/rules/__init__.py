"""Checks: (context) -> Iterator[Finding]. Families are registered in `dtkguard.rules.catalog`."""

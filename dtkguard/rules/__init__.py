"""Checks: (context) -> Iterator[Finding]. The registry is in `dtkguard.rules.engine`."""

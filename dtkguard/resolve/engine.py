"""The resolvelib resolver dtkguard runs: resolvelib's own, with its pin check remembered.

Every round, resolvelib asks of every criterion whether the current pin still satisfies it
(``Resolution._is_current_pin_satisfying``: all its requirements, through the provider's
``is_satisfied_by``), so the checks grow with the square of the graph (26,879 of them for the
138-package vLLM closure). A criterion is never changed in place (resolvelib makes a new one
when it adds or removes a requirement) and our candidates are interned, so the answer for the
same criterion object and the same pin object cannot change: it is kept per name and asked
again only when either is another object. The result is resolvelib's, step for step.

Carried here rather than patched into the installed resolvelib; with a resolvelib whose
internals differ, the plain `resolvelib.Resolver` runs.
"""

from __future__ import annotations

from typing import Any


def resolver_class() -> Any:
    """A `resolvelib.Resolver` subclass using the remembering resolution (or the plain one)."""
    from resolvelib import Resolver

    try:
        from resolvelib.resolvers.resolution import Resolution, _build_result
    except ImportError:  # another resolvelib layout: no memo, same answers
        return Resolver
    if not hasattr(Resolution, "_is_current_pin_satisfying"):
        return Resolver

    class _Remembering(Resolution):
        def __init__(self, provider: Any, reporter: Any) -> None:
            super().__init__(provider, reporter)
            self._pin_checks: dict[Any, tuple[Any, Any, bool]] = {}

        def _is_current_pin_satisfying(self, name: Any, criterion: Any) -> bool:
            pin = self.state.mapping.get(name)
            if pin is None:
                return False
            seen = self._pin_checks.get(name)
            if seen is not None and seen[0] is criterion and seen[1] is pin:
                return seen[2]
            ok = super()._is_current_pin_satisfying(name, criterion)
            self._pin_checks[name] = (criterion, pin, ok)
            return ok

    class _Resolver(Resolver):
        def resolve(  # type: ignore[override]  # resolvelib's own Resolver says the same
            self, requirements: Any, max_rounds: int = 100
        ) -> Any:
            resolution = _Remembering(self.provider, self.reporter)
            return _build_result(resolution.resolve(requirements, max_rounds=max_rounds))

    return _Resolver

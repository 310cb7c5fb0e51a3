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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from resolvelib import AbstractProvider, BaseReporter, Resolver
    from resolvelib.resolvers import Criterion, Result

    from dtkguard.resolve.candidates import Candidate, Req


def resolver_class() -> type[Resolver[Req, Candidate, str]]:
    """A `resolvelib.Resolver` subclass using the remembering resolution (or the plain one)."""
    from resolvelib import Resolver

    from dtkguard.resolve.candidates import Candidate, Req

    try:
        from resolvelib.resolvers.resolution import Resolution, _build_result
    except ImportError:  # another resolvelib layout: no memo, same answers
        return Resolver
    if not hasattr(Resolution, "_is_current_pin_satisfying"):
        return Resolver

    class _Remembering(Resolution[Req, Candidate, str]):
        def __init__(
            self,
            provider: AbstractProvider[Req, Candidate, str],
            reporter: BaseReporter[Req, Candidate, str],
        ) -> None:
            super().__init__(provider, reporter)
            self._pin_checks: dict[str, tuple[Criterion[Req, Candidate], Candidate, bool]] = {}

        def _is_current_pin_satisfying(
            self, name: str, criterion: Criterion[Req, Candidate]
        ) -> bool:
            pin = self.state.mapping.get(name)
            if pin is None:
                return False
            seen = self._pin_checks.get(name)
            if seen is not None and seen[0] is criterion and seen[1] is pin:
                return seen[2]
            ok = super()._is_current_pin_satisfying(name, criterion)
            self._pin_checks[name] = (criterion, pin, ok)
            return ok

    class _Resolver(Resolver[Req, Candidate, str]):
        def resolve(  # type: ignore[override]  # resolvelib's own Resolver says the same
            self, requirements: Iterable[Req], max_rounds: int = 100
        ) -> Result[Req, Candidate, str]:
            resolution = _Remembering(self.provider, self.reporter)
            return _build_result(resolution.resolve(requirements, max_rounds=max_rounds))

    return _Resolver

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

import operator

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from resolvelib import AbstractProvider, BaseReporter, Resolver
    from resolvelib.resolvers import Criterion, Result

    from dtkguard.resolve.candidates import Candidate, Req


def resolver_class() -> type[Resolver[Req, Candidate, str]]:
    """A `resolvelib.Resolver` subclass using the remembering resolution (or the plain one)."""
    from resolvelib import Resolver

    from dtkguard.resolve.candidates import Candidate, Req

    if not _known_layout():  # another resolvelib layout: no memo, same answers
        return Resolver
    from resolvelib.resolvers.resolution import Resolution, _build_result

    class _Remembering(Resolution[Req, Candidate, str]):
        def __init__(
            self,
            provider: AbstractProvider[Req, Candidate, str],
            reporter: BaseReporter[Req, Candidate, str],
        ) -> None:
            super().__init__(provider, reporter)
            self._pin_checks: dict[str, tuple[Criterion[Req, Candidate], Candidate, bool]] = {}
            self._matches_for = getattr(provider, "matches_for", None)

        def _is_current_pin_satisfying(
            self, name: str, criterion: Criterion[Req, Candidate]
        ) -> bool:
            pin = self._states[-1].mapping.get(name)  # self.state, without the property
            if pin is None:
                return False
            seen = self._pin_checks.get(name)
            if seen is not None and seen[0] is criterion and seen[1] is pin:
                return seen[2]
            ok = super()._is_current_pin_satisfying(name, criterion)
            self._pin_checks[name] = (criterion, pin, ok)
            return ok

        def _add_to_criteria(
            self,
            criteria: dict[str, Criterion[Req, Candidate]],
            requirement: Req,
            parent: Candidate | None,
        ) -> None:
            """resolvelib's, step for step, asking the provider's `matches_for` with the
            requirements and incompatibilities as tuples instead of through two
            ``IteratorMapping`` views (12,133 calls in pyrax's 597 rounds), and wrapping a list
            answer without ``isinstance(matches, typing.Sequence)``."""
            matches_for = self._matches_for
            if matches_for is None:
                super()._add_to_criteria(criteria, requirement, parent)
                return
            _add_with_tuples(self, matches_for, criteria, requirement, parent)

    class _Resolver(Resolver[Req, Candidate, str]):
        def resolve(  # type: ignore[override]  # resolvelib's own Resolver says the same
            self, requirements: Iterable[Req], max_rounds: int = 100
        ) -> Result[Req, Candidate, str]:
            resolution = _Remembering(self.provider, self.reporter)
            return _build_result(resolution.resolve(requirements, max_rounds=max_rounds))

    return _Resolver


def _known_layout() -> bool:
    """resolvelib has the private parts `resolver_class` and `_add_with_tuples` use."""
    try:
        import resolvelib.resolvers.criterion
        import resolvelib.resolvers.exceptions
        import resolvelib.structs
        from resolvelib.resolvers.resolution import Resolution
    except ImportError:
        return False
    structs = ("RequirementInformation", "_SequenceIterableView", "build_iter_view")
    return all(
        hasattr(Resolution, name) for name in ("_is_current_pin_satisfying", "_add_to_criteria")
    ) and all(hasattr(resolvelib.structs, name) for name in structs)


def _add_with_tuples(
    resolution: Any,
    matches_for: Any,
    criteria: dict[str, Any],
    requirement: Any,
    parent: Any,
) -> None:
    """The body of `resolver_class`'s ``_add_to_criteria`` (resolvelib's, step for step)."""
    from resolvelib.resolvers.criterion import Criterion
    from resolvelib.resolvers.exceptions import RequirementsConflicted
    from resolvelib.structs import RequirementInformation, _SequenceIterableView, build_iter_view

    requirement_of = operator.itemgetter(0)  # of a RequirementInformation
    resolution._r.adding_requirement(requirement=requirement, parent=parent)
    identifier = resolution._p.identify(requirement_or_candidate=requirement)
    criterion = criteria.get(identifier)
    info = RequirementInformation(requirement, parent)
    if criterion:
        incompatibilities = list(criterion.incompatibilities)
        information = list(criterion.information)
        information.append(info)
        reqs = tuple(map(requirement_of, information))
    else:
        incompatibilities = []
        information = [info]
        reqs = (requirement,)
    matches = matches_for(identifier, reqs, tuple(incompatibilities))
    view = _SequenceIterableView(matches) if type(matches) is list else build_iter_view(matches)
    criterion = Criterion(
        candidates=view, information=information, incompatibilities=incompatibilities
    )
    if not criterion.candidates:
        raise RequirementsConflicted(criterion)
    criteria[identifier] = criterion

"""`record` makes the classes `dataclasses.dataclass` makes: each shape below is defined both
ways and every behaviour compared (construction and its errors, repr, equality, hashing,
frozen-ness, asdict, replace, `dataclasses` introspection)."""

from __future__ import annotations

import dataclasses
import enum
import os
import subprocess
import sys

import pytest

from dtkguard import record as rec
from tests.support.cli import REPO


class Colour(str, enum.Enum):
    RED = "red"


def _pair(frozen: bool = False, eq: bool = True):
    """The same class body made by ``@dataclass`` and by ``@record``."""

    def body(deco, fld):
        @deco(frozen=frozen, eq=eq)
        class Item:
            name: str
            colour: Colour
            size: int = 3
            tags: tuple[str, ...] = fld(default=())
            extra: dict[str, object] = fld(default_factory=dict)
            hidden: list[int] = fld(default_factory=list, repr=False)
            loose: str = fld(default="x", compare=False)
            derived: int = fld(default=0, init=False)

        return Item

    return body(dataclasses.dataclass, dataclasses.field), body(rec.record, rec.field)


CALLS = [
    ((), {}),
    (("a",), {}),
    (("a", Colour.RED), {}),
    (("a", Colour.RED, 5, ("t",)), {"extra": {"k": [1, {"n": Colour.RED}]}}),
    ((), {"name": "a", "colour": Colour.RED, "hidden": [1]}),
    (("a",), {"name": "b", "colour": Colour.RED}),
    (("a", Colour.RED), {"nope": 1}),
    (("a", Colour.RED), {"derived": 1}),
    (("a", Colour.RED, 1, (), {}, [], "l", 9), {}),
]


def _make(cls, args, kwargs):
    try:
        return cls(*args, **kwargs), None
    except TypeError as exc:
        return None, str(exc).split("__init__() ", 1)[-1]


@pytest.mark.parametrize("frozen", [False, True])
@pytest.mark.parametrize("eq", [True, False])
@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_construction_repr_equality_and_hashing_match(frozen, eq, args, kwargs) -> None:
    dc, rc = _pair(frozen, eq)
    a, a_error = _make(dc, args, kwargs)
    b, b_error = _make(rc, args, kwargs)
    assert a_error == b_error
    if a is None:
        return
    assert repr(a) == repr(b)
    assert dataclasses.asdict(a) == rec.asdict(b) == dataclasses.asdict(b)
    assert vars(a) == vars(b)
    assert list(vars(a)) == list(vars(b))
    twin, other = rc(*args, **kwargs), rc("other", Colour.RED)
    assert (b == twin) == (a == dc(*args, **kwargs))
    assert (b == other) is False
    assert (b == a) is False and b.__eq__(a) is NotImplemented
    assert (dc.__hash__ is None) == (rc.__hash__ is None)
    if dc.__hash__ is not None and eq:
        try:
            expected = hash(a)
        except TypeError:
            with pytest.raises(TypeError):
                hash(b)
        else:
            assert hash(b) == expected
    assert dc.__match_args__ == rc.__match_args__
    assert [f.name for f in dataclasses.fields(a)] == [f.name for f in rec.fields(b)]
    assert [f.name for f in dataclasses.fields(a)] == [f.name for f in dataclasses.fields(b)]
    assert dataclasses.is_dataclass(b)


def test_frozen_records_refuse_assignment_as_dataclasses_do() -> None:
    dc, rc = _pair(frozen=True)
    a, b = dc("a", Colour.RED), rc("a", Colour.RED)
    for obj in (a, b):
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'size'"):
            obj.size = 4
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'new'"):
            obj.new = 4
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'size'"):
            del obj.size
        with pytest.raises(TypeError, match="unhashable type: 'dict'"):
            hash(obj)

    def point(deco, fld):
        @deco(frozen=True)
        class Point:
            x: int
            y: str = "y"
            note: str = fld(default="", compare=False)
            weight: int = fld(default=0, hash=False)

        return Point

    dp, rp = point(dataclasses.dataclass, dataclasses.field), point(rec.record, rec.field)
    assert hash(rp(1, "a", "n", 5)) == hash(dp(1, "a", "n", 5)) == hash((1, "a"))
    assert rp(1, note="n") == rp(1, note="m") and rp(1, weight=1) != rp(1, weight=2)
    assert {rp(1): 1}[rp(1, note="other")] == 1


def test_replace_both_ways() -> None:
    dc, rc = _pair()
    a, b = dc("a", Colour.RED, extra={"k": 1}), rc("a", Colour.RED, extra={"k": 1})
    assert repr(dataclasses.replace(a, size=9)) == repr(rec.replace(b, size=9))
    assert repr(dataclasses.replace(b, size=9)) == repr(rec.replace(b, size=9))
    for replace in (dataclasses.replace, rec.replace):
        with pytest.raises(ValueError, match="init=False"):
            replace(b, derived=2)


def test_inheritance_post_init_and_own_methods() -> None:
    def make(deco, fld):
        @deco
        class Base:
            a: int
            b: list[int] = fld(default_factory=list)

        @deco(frozen=False)
        class Child(Base):
            c: str = "c"
            a: int = 7  # redefined: keeps its place, takes the new default

            def __post_init__(self) -> None:
                self.b.append(self.a)

            def __repr__(self) -> str:
                return f"child {self.a}"

        @deco
        class Error(Exception):
            message: str
            where: str | None = None

            def __post_init__(self) -> None:
                super().__init__(self.message)

        return Child, Error

    (dc, de), (rc, re_) = (
        make(dataclasses.dataclass, dataclasses.field),
        make(rec.record, rec.field),
    )
    assert vars(dc()) == vars(rc()) == {"a": 7, "b": [7], "c": "c"}
    assert repr(rc(1)) == "child 1"
    assert dc.__match_args__ == rc.__match_args__
    assert str(de("m")) == str(re_("m")) == "m" and re_("m").args == ("m",)
    assert repr(de("m", "w")) == repr(re_("m", "w"))
    assert de.__hash__ is None and re_.__hash__ is None


def test_definition_errors_match() -> None:
    for deco, fld in ((dataclasses.dataclass, dataclasses.field), (rec.record, rec.field)):
        with pytest.raises(ValueError, match="mutable default"):

            @deco
            class Mutable:
                items: list[int] = []  # noqa: RUF012

        with pytest.raises(TypeError, match="non-default argument 'b' follows default"):

            @deco
            class Order:
                a: int = 1
                b: int

        with pytest.raises(ValueError, match="both default and default_factory"):
            fld(default=1, default_factory=list)


def test_the_cached_check_path_imports_no_dataclasses() -> None:
    """The point of `record`: the models of a check import neither dataclasses nor inspect."""
    code = (
        "import sys, dtkguard.findings, dtkguard.report.model, dtkguard.env.store, "
        "dtkguard.policy.compiled, dtkguard.audit.request, dtkguard.errors; "
        "print(sorted({'dataclasses', 'inspect'} & set(sys.modules)))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_dataclass_may_extend_a_record_and_a_record_no_dataclass() -> None:
    """`dtkguard.audit.assemble.AuditRequest` is a ``@dataclass`` over the record `Request`."""

    @rec.record(frozen=True)
    class Base:
        a: int
        b: dict[str, int] = rec.field(default_factory=dict)

    @dataclasses.dataclass(frozen=True)
    class Child(Base):
        c: str = "c"

    child = Child(1, {"k": 2}, "d")
    assert repr(child).endswith("<locals>.Child(a=1, b={'k': 2}, c='d')")
    assert rec.asdict(child) == dataclasses.asdict(child) == {"a": 1, "b": {"k": 2}, "c": "d"}
    assert rec.asdict(Base(1)) == {"a": 1, "b": {}}
    with pytest.raises(dataclasses.FrozenInstanceError):
        child.c = "e"
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):

        @dataclasses.dataclass
        class Thawed(Base):
            pass

    with pytest.raises(TypeError, match="a record cannot extend a dataclass"):

        @rec.record
        class Back(Child):
            pass


@rec.record(frozen=True)
class Frozen:
    a: int
    b: dict[str, list[int]] = rec.field(default_factory=dict)


@rec.record
class Thawed:
    a: int
    b: list[int] = rec.field(default_factory=list)


@pytest.mark.parametrize("obj", [Frozen(1, {"k": [1]}), Thawed(2, [3])])
def test_records_copy_and_pickle_as_dataclasses_do(obj) -> None:
    import copy
    import pickle

    for twin in (copy.copy(obj), copy.deepcopy(obj), pickle.loads(pickle.dumps(obj))):
        assert twin == obj and repr(twin) == repr(obj) and type(twin) is type(obj)
    assert copy.deepcopy(obj).b is not obj.b

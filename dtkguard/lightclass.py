"""`record`: the data classes of the paths that run most (a cached `check`), made without the
cost of `dataclasses`.

On Python 3.11 `dataclasses` imports `inspect` (and `ast`, `dis`, `tokenize`) and compiles
each generated method on its own: about 1.3 ms per class, a fifth of a cached check for the
~30 classes it defines. A record gets the same methods as ``@dataclass`` (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, frozen ``__setattr__``/``__delattr__``,
``__match_args__``) as shared functions that read the class's field table, so nothing is
compiled. They behave as the dataclass's do: the same field order and defaults, the same
repr, equality only with the same class, the same hashing rules, `FrozenInstanceError`.
``__dataclass_fields__`` is built on first use, so `dataclasses.fields`, `replace`, `asdict`
and `is_dataclass` see a record as a dataclass (importing `dataclasses` then); dtkguard's own
code uses `fields`, `replace` and `asdict` of this module, which do not.

Supported: ``@record``, ``@record(frozen=True)``, ``@record(eq=False)``, `field` with
``default``, ``default_factory``, ``init``, ``repr``, ``compare``, ``hash``; fields inherited
from a record base. Not: ``order``, ``slots``, ``kw_only``, `InitVar` (use ``@dataclass``).
"""

from __future__ import annotations

import reprlib
from operator import attrgetter

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are lazy
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_: object) -> object:
        return lambda func: func


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Field:
    """One field of a record (what `field` returns, completed with the name)."""

    __slots__ = ("compare", "default", "default_factory", "hash", "init", "name", "repr", "type")

    def __init__(
        self,
        default: Any,
        default_factory: Any,
        init: bool,
        repr: bool,
        compare: bool,
        hash: bool | None,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare
        self.hash = hash

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r})"


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | Any = MISSING,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
    hash: bool | None = None,
) -> Any:
    """A field's options, as `dataclasses.field`."""
    return Field(default, default_factory, init, repr, compare, hash)


@dataclass_transform(field_specifiers=(field, Field))
def record(cls: Any = None, /, *, frozen: bool = False, eq: bool = True) -> Any:
    """``@dataclass`` for the hot paths: ``@record``, ``@record(frozen=True)``."""

    def wrap(cls: type[T]) -> type[T]:
        made: type[T] = _process(cls, frozen, eq)
        return made

    return wrap if cls is None else wrap(cls)


def fields(obj: Any) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order."""
    table = _table(obj if isinstance(obj, type) else type(obj))
    if table is None:
        raise TypeError(f"not a record: {obj!r}")
    return table


def _table(cls: type) -> tuple[Field, ...] | None:
    """The fields of ``cls`` when it is a record (a subclass a ``@dataclass`` made is not)."""
    for klass in cls.__mro__:
        own = klass.__dict__
        if "__record_fields__" in own:
            fields_: tuple[Field, ...] = own["__record_fields__"]
            return fields_
        if "__dataclass_fields__" in own:
            return None
    return None


def asdict(obj: Any) -> dict[str, Any]:
    """`dataclasses.asdict` of a record: records, lists, tuples and dicts recursed, the rest
    copied deeply (atoms as they are)."""
    out: dict[str, Any] = _asdict(obj)
    return out


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes``, as `dataclasses.replace`."""
    for f in fields(obj):
        if not f.init:
            if f.name in changes:
                raise ValueError(f"field {f.name} is declared with init=False")
        elif f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


_ATOMS = (str, int, float, bool, bytes, type(None))


def _asdict(obj: Any) -> Any:
    if isinstance(obj, _ATOMS):
        return obj
    table = _table(type(obj))
    if table is not None:
        return {f.name: _asdict(getattr(obj, f.name)) for f in table}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[_asdict(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(_asdict(v) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((_asdict(k), _asdict(v)) for k, v in obj.items())
    if hasattr(type(obj), "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(obj)
    import copy

    return copy.deepcopy(obj)


def _is_classvar(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    head = text.split("[", 1)[0].strip()
    return head in ("ClassVar", "typing.ClassVar", "t.ClassVar")


def _own_fields(cls: type) -> list[Field]:
    out = []
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (inspect costs 10 ms to import)
    for name, annotation in own.items():
        if _is_classvar(annotation):
            continue
        default = cls.__dict__.get(name, MISSING)
        if isinstance(default, Field):
            f = default
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        else:
            f = Field(default, MISSING, True, True, True, None)
        if f.default is not MISSING and type(f.default).__hash__ is None:
            kind = type(f.default)
            raise ValueError(
                f"mutable default {kind} for field {name} is not allowed: use default_factory"
            )
        f.name, f.type = name, annotation
        out.append(f)
    return out


def _process(cls: Any, frozen: bool, eq: bool) -> Any:
    inherited: dict[str, Field] = {}
    for base in cls.__mro__[-1:0:-1]:
        if "__dataclass_fields__" in base.__dict__ and "__record_fields__" not in base.__dict__:
            raise TypeError(f"{cls.__name__}: a record cannot extend a dataclass")
        for f in base.__dict__.get("__record_fields__", ()):
            inherited[f.name] = f
    for f in _own_fields(cls):
        inherited[f.name] = f
    table = tuple(inherited.values())
    seen_default = False
    for f in table:
        if not f.init:
            continue
        if f.default is MISSING and f.default_factory is MISSING:
            if seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            seen_default = True
    cls.__record_fields__ = table
    cls.__record_spec__ = _spec(cls, table)
    cls.__record_params__ = (frozen, eq)
    cls.__dataclass_fields__ = _LazyDataclass("__dataclass_fields__")
    cls.__dataclass_params__ = _LazyDataclass("__dataclass_params__")
    _methods(cls, table, frozen, eq)
    return cls


def _spec(cls: type, table: tuple[Field, ...]) -> tuple[Any, ...]:
    """What `_init` reads: (name, init, default, factory) per field, whether there is a
    ``__post_init__``, the names ``__init__`` takes."""
    rows = tuple(
        (
            f.name,
            f.init,
            f.default if f.init else MISSING,  # else read from the class, as dataclasses does
            None if f.default_factory is MISSING else f.default_factory,
        )
        for f in table
    )
    return (rows, hasattr(cls, "__post_init__"), tuple(f.name for f in table if f.init))


def _set(cls: type, name: str, value: Any, own: bool = True) -> bool:
    """Set a method the class does not define itself (dataclasses never overwrites one);
    ``own``: a function made for this class, named after it."""
    if name in cls.__dict__:
        return True
    if own:
        value.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, value)
    return False


def _methods(cls: Any, table: tuple[Field, ...], frozen: bool, eq: bool) -> None:
    _set(cls, "__init__", _init, own=False)
    _set(cls, "__repr__", reprlib.recursive_repr()(_repr_of(table)))
    compared = [f for f in table if f.compare]
    key = _key([f.name for f in compared])
    if eq:
        _set(cls, "__eq__", _eq_of(key))
    class_hash = cls.__dict__.get("__hash__", MISSING)
    explicit = not (class_hash is MISSING or (class_hash is None and "__eq__" in cls.__dict__))
    if eq and frozen and not explicit:
        hashed = [f.name for f in table if (f.compare if f.hash is None else f.hash)]
        cls.__hash__ = _hash_of(_key(hashed))
    elif eq and not explicit:
        cls.__hash__ = None
    if frozen:
        names = frozenset(f.name for f in table)
        for name, method in _frozen(cls, names):
            if _set(cls, name, method):
                raise TypeError(f"cannot overwrite attribute {name} in class {cls.__name__}")
    if "__match_args__" not in cls.__dict__:
        setattr(cls, "__match_args__", tuple(f.name for f in table if f.init))  # noqa: B010


def _init(self: Any, /, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    rows, post_init, names = cls.__record_spec__
    if len(args) > len(names):
        _call_error(cls, args, kwargs)
    values = self.__dict__
    i = 0
    for name, init, default, factory in rows:
        if init:
            if i < len(args):
                values[name] = args[i]
                i += 1
                continue
            if name in kwargs:
                values[name] = kwargs.pop(name)
                continue
        if default is not MISSING:
            values[name] = default
        elif factory is not None:
            values[name] = factory()
        elif init:
            _call_error(cls, args, kwargs)
    if kwargs:
        _call_error(cls, args, kwargs)
    if post_init:
        self.__post_init__()


def _call_error(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The `TypeError` Python raises for a generated ``__init__`` called so, in its order."""
    rows, _, names = cls.__record_spec__
    where = f"{cls.__qualname__}.__init__()"
    required = [r[0] for r in rows if r[1] and r[2] is MISSING and r[3] is None]
    if len(args) > len(names):
        low, high = len(required) + 1, len(names) + 1
        takes = f"{low}" if low == high else f"from {low} to {high}"
        raise TypeError(
            f"{where} takes {takes} positional arguments but {len(args) + 1} were given"
        )
    for name in kwargs:
        if name not in names:
            raise TypeError(f"{where} got an unexpected keyword argument '{name}'")
        if names.index(name) < len(args):
            raise TypeError(f"{where} got multiple values for argument '{name}'")
    missing = [repr(n) for n in required if names.index(n) >= len(args) and n not in kwargs]
    listed = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + f" and {missing[-1]}"
    if len(missing) > 2:
        listed = ", ".join(missing[:-1]) + f", and {missing[-1]}"
    plural = "argument" if len(missing) == 1 else "arguments"
    raise TypeError(f"{where} missing {len(missing)} required positional {plural}: {listed}")


def _repr_of(table: tuple[Field, ...]) -> Callable[[Any], str]:
    shown = [f.name for f in table if f.repr]

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


def _key(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        get_one = attrgetter(names[0])
        return lambda obj: (get_one(obj),)
    return attrgetter(*names)


def _eq_of(key: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash_of(key: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(key(self))

    return __hash__


def _frozen(cls: Any, names: frozenset[str]) -> list[tuple[str, Any]]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return [("__setattr__", __setattr__), ("__delattr__", __delattr__)]


class _LazyDataclass:
    """``__dataclass_fields__`` and ``__dataclass_params__``, made with `dataclasses` (a
    shadow dataclass of the same fields and options) when something asks for them."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any) -> Any:
        import dataclasses

        made = []
        for f in _table(owner) or ():
            given = {"default": f.default, "default_factory": f.default_factory}
            spec = dataclasses.field(
                **{k: v for k, v in given.items() if v is not MISSING},
                init=f.init,
                repr=f.repr,
                compare=f.compare,
                hash=f.hash,
            )
            made.append((f.name, f.type, spec))
        frozen, eq = owner.__record_params__
        shadow = dataclasses.make_dataclass(owner.__name__, made, frozen=frozen, eq=eq)
        for name in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(owner, name, vars(shadow)[name])
        return vars(shadow)[self.name]

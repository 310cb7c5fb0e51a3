"""PEP 440 versions, specifiers and PEP 508 requirements and markers, as packaging reads them,
for the already-satisfied fast path (`dtkguard.guard.satisfied`): packaging's requirement
parser costs more to import than the whole answer. Strict: whatever this does not read the way
packaging does (``===``, legacy versions, old marker names, a comparison packaging would refuse)
raises `Unsure`, and the caller falls back to pip/uv.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re


class Unsure(ValueError):
    """Not read the way packaging would read it, or not at all."""


#: the patterns, compiled on first use (`_pattern`): the usual answer (plain names, ``==`` pins
#: of plain versions) is read by hand, and importing `re` and compiling these costs more than
#: the whole answer
_PATTERNS = {
    "version": (
        r"(?i)v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
        r"(?:[-_.]?(?P<pre_l>alpha|beta|preview|pre|rc|a|b|c)[-_.]?(?P<pre_n>\d+)?)?"
        r"(?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?"
        r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?"
        r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?"
    ),
    "spec": r"\s*(~=|==|!=|<=|>=|<|>)\s*([A-Za-z0-9_.*+!-]+)\s*",
}
_COMPILED: dict[str, re.Pattern[str]] = {}


def _pattern(name: str) -> re.Pattern[str]:
    if name not in _COMPILED:
        import re

        _COMPILED[name] = re.compile(_PATTERNS[name])
    return _COMPILED[name]


_DIGITS = frozenset("0123456789")
_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_NAME_INNER = _ALNUM | frozenset("._-")


def _plain_version(text: str) -> tuple[str, int | None, str | None] | None:
    """(release, post, local) of ``N(.N)*`` with an optional ``.postN`` and an optional
    ``+LOCAL`` of ASCII letters and digits in parts split by ``-``, ``_`` or ``.``: the one way
    the version pattern reads such a text (no epoch, pre or dev part fits in it); None for any
    other text (the pattern decides)."""
    public, plus, local = text.partition("+")
    release, dot_post, post = public.partition(".post")
    if dot_post and not (post and _DIGITS.issuperset(post)):
        return None
    if not all(part and _DIGITS.issuperset(part) for part in release.split(".")):
        return None
    post_number = int(post) if dot_post else None
    if not plus:
        return release, post_number, None
    if not all(part and _ALNUM.issuperset(part) for part in _split_local(local)):
        return None
    return release, post_number, local


def _split_local(local: str) -> list[str]:
    """``re.split(r"[-_.]", local)``."""
    return local.replace("-", ".").replace("_", ".").split(".")


_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_PRE_TEXT = ("a", "b", "rc")


class Version:
    """A PEP 440 version: its sort key (packaging's order), its parts."""

    __slots__ = ("dev", "epoch", "key", "local", "post", "pre", "public_key", "release")

    def __init__(self, text: str) -> None:
        plain = _plain_version(text.strip())
        if plain is not None:
            self.epoch = 0
            self.release = tuple(int(p) for p in plain[0].split("."))
            self.pre = self.dev = None
            self.post = plain[1]
            local = plain[2]
        else:
            m = _pattern("version").fullmatch(text.strip())
            if m is None:
                raise Unsure(f"invalid version {text!r}")
            self.epoch = int(m.group("epoch") or 0)
            self.release = tuple(int(p) for p in m.group("release").split("."))
            self.pre = (
                (_PRE[m.group("pre_l").lower()], int(m.group("pre_n") or 0))
                if m.group("pre_l")
                else None
            )
            post = m.group("post_n1") or m.group("post_n2")
            self.post = int(post or 0) if (m.group("post_n1") or m.group("post_l")) else None
            self.dev = int(m.group("dev_n") or 0) if m.group("dev_l") else None
            local = m.group("local")
        self.local = (
            tuple(
                (1, int(p), "") if p.isdigit() else (0, 0, p.lower()) for p in _split_local(local)
            )
            if local
            else None
        )
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        if self.pre is None and self.post is None and self.dev is not None:
            pre: tuple[int, int, int] = (0, 0, 0)  # 1.0.dev0 sorts before 1.0a0
        elif self.pre is None:
            pre = (2, 0, 0)
        else:
            pre = (1, *self.pre)
        post_key = -1 if self.post is None else self.post
        dev_key = float("inf") if self.dev is None else self.dev
        self.public_key = (self.epoch, tuple(release), pre, post_key, dev_key)
        self.key = (*self.public_key, (0,) if self.local is None else (1, *self.local))

    @property
    def is_prerelease(self) -> bool:
        return self.pre is not None or self.dev is not None

    @property
    def base_key(self) -> tuple[int, tuple[int, ...]]:
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        return self.epoch, tuple(release)

    def __str__(self) -> str:
        """packaging's normalised form."""
        out = f"{self.epoch}!" if self.epoch else ""
        out += ".".join(map(str, self.release))
        if self.pre is not None:
            out += f"{_PRE_TEXT[self.pre[0]]}{self.pre[1]}"
        if self.post is not None:
            out += f".post{self.post}"
        if self.dev is not None:
            out += f".dev{self.dev}"
        if self.local is not None:
            out += "+" + ".".join(str(n) if kind else s for kind, n, s in self.local)
        return out


#: what a specifier's version may hold (the spec pattern's second group)
_SPEC_VERSION = _ALNUM | frozenset("_.*+!-")
_OPS = ("~=", "==", "!=", "<=", ">=", "<", ">")


def _spec_parts(part: str) -> tuple[str, str] | None:
    """(operator, version) of one specifier clause, as the spec pattern reads it; by hand for a
    clause without white space (ASCII), else by the pattern; None when it does not match."""
    if part.isascii() and not any(c.isspace() for c in part):
        op = next((o for o in _OPS if part.startswith(o)), None)
        if op is None:
            return None
        version = part[len(op) :]
        return (op, version) if version and _SPEC_VERSION.issuperset(version) else None
    m = _pattern("spec").fullmatch(part)
    return None if m is None else (m.group(1), m.group(2))


class Specifier:
    """One ``OP VERSION`` clause (no ``===``)."""

    def __init__(self, op: str, version: str) -> None:
        self.op, self.text = op, version
        self.wildcard = version.endswith(".*")
        if self.wildcard:
            if op not in ("==", "!=") or "+" in version:
                raise Unsure(f"{op}{version}")
            self.version = Version(version[:-2])
        else:
            self.version = Version(version)
            if self.version.local is not None and op not in ("==", "!="):
                raise Unsure(f"{op}{version}")  # packaging refuses it
            if op == "~=" and len(self.version.release) < 2:
                raise Unsure(f"{op}{version}")

    def __str__(self) -> str:
        return f"{self.op}{self.text}"

    def _equal(self, v: Version) -> bool:
        spec = self.version
        if self.wildcard:
            n = len(spec.release)
            release = (v.release + (0,) * n)[:n]
            return v.epoch == spec.epoch and release == spec.release
        if spec.local is None:
            return v.public_key == spec.public_key
        return v.key == spec.key

    def contains(self, v: Version) -> bool:
        """packaging's ``contains(v, prereleases=True)``."""
        spec, op = self.version, self.op
        if op == "==":
            return self._equal(v)
        if op == "!=":
            return not self._equal(v)
        if op == "<=":
            return v.public_key <= spec.public_key
        if op == ">=":
            return v.public_key >= spec.public_key
        if op == "<":
            if not v.key < spec.key:
                return False
            return spec.is_prerelease or not v.is_prerelease or v.base_key != spec.base_key
        if op == ">":
            if not v.key > spec.key:
                return False
            if spec.post is None and v.post is not None and v.base_key == spec.base_key:
                return False
            return v.local is None or v.base_key != spec.base_key
        # ~=: >= V and == the release without its last part, .*
        prefix = Specifier("==", ".".join(map(str, spec.release[:-1])) + ".*")
        prefix.version.epoch = spec.epoch
        return v.public_key >= spec.public_key and prefix._equal(v)


class SpecifierSet:
    def __init__(self, text: str) -> None:
        self.specs: list[Specifier] = []
        text = text.strip()
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1]
        if not text.strip():
            return
        for part in text.split(","):
            parts = _spec_parts(part)
            if parts is None:
                raise Unsure(f"specifier {part!r}")
            self.specs.append(Specifier(*parts))

    def __str__(self) -> str:
        return ",".join(sorted(str(s) for s in self.specs))

    def contains(self, v: Version) -> bool:
        return all(s.contains(v) for s in self.specs)


_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_PATTERNS["requirement"] = (
    rf"\s*(?P<name>{_NAME})\s*(?:\[(?P<extras>[^\]]*)\])?\s*(?P<spec>[^;]*?)\s*(?:;(?P<marker>.*))?"
)
_PATTERNS["extra"] = rf"\s*{_NAME}\s*"
_PATTERNS["token"] = (
    r"\s*(?:(?P<str>'[^']*'|\"[^\"]*\")|(?P<op>===|==|!=|<=|>=|~=|<|>|not\s+in\b|in\b)"
    r"|(?P<paren>[()])|(?P<word>[A-Za-z_][A-Za-z0-9_.]*))"
)


def canonical(name: str) -> str:
    """``re.sub(r"[-_.]+", "-", name).lower()``, packaging's: unlike `dtkguard.decision.canonical`
    it strips no white space (a marker's quoted extra is compared as packaging compares it)."""
    text = name.replace("_", "-").replace(".", "-")
    while "--" in text:
        text = text.replace("--", "-")
    return text.lower()


def _is_name(text: str) -> bool:
    """``text`` is a whole PEP 508 name (the name pattern, ASCII)."""
    return bool(text) and text[0] in _ALNUM and text[-1] in _ALNUM and _NAME_INNER.issuperset(text)


def _plain_requirement(text: str) -> tuple[str, str] | None:
    """(name, specifiers) of ``NAME`` or ``NAME`` followed by specifiers, ASCII without white
    space, brackets or a marker: how the requirement pattern reads it (its name is the longest
    name at the start, nothing else can hold its characters); None for any other text."""
    if not text.isascii() or any(c.isspace() or c in "[];" for c in text):
        return None
    end = next((i for i, c in enumerate(text) if c not in _NAME_INNER), len(text))
    name = text[:end]
    if not _is_name(name):
        return None
    return name, text[end:]


class Requirement:
    """``name[extras] specifiers ; marker`` (no URL)."""

    def __init__(self, text: str) -> None:
        if "@" in text:
            raise Unsure(f"requirement {text!r}")
        self.extras: set[str] = set()
        plain = _plain_requirement(text)
        if plain is not None:
            self.name = plain[0]
            self.specifier = SpecifierSet(plain[1])
            self.marker: Marker | None = None
            return
        m = _pattern("requirement").fullmatch(text)
        if m is None:
            raise Unsure(f"requirement {text!r}")
        self.name = m.group("name")
        extras = m.group("extras")
        if extras is not None:
            for e in extras.split(","):
                if not _pattern("extra").fullmatch(e):
                    raise Unsure(f"extras of {text!r}")
                self.extras.add(e.strip())
        self.specifier = SpecifierSet(m.group("spec"))
        marker = m.group("marker")
        self.marker = Marker(marker) if marker is not None else None


VARIABLES = frozenset(
    (
        "implementation_name", "implementation_version", "os_name", "platform_machine",
        "platform_release", "platform_system", "platform_version", "python_full_version",
        "platform_python_implementation", "python_version", "sys_platform", "extra",
    )
)  # fmt: skip


class Marker:
    """A PEP 508 marker, evaluated as packaging evaluates it."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        token = _pattern("token")
        while pos < len(text):
            m = token.match(text, pos)
            if m is None or m.end() == pos:
                raise Unsure(f"marker {text!r}")
            kind = m.lastgroup or ""
            value = m.group(kind)
            if kind == "word" and value not in ("and", "or") and value not in VARIABLES:
                raise Unsure(f"marker variable {value!r}")
            if kind == "op":
                value = " ".join(value.split())  # re.sub(r"\s+", " ", value): not in, in
            self.tokens.append((kind, value))
            pos = m.end()
            while pos < len(text) and text[pos].isspace():
                pos += 1
        if not self.tokens:
            raise Unsure("empty marker")

    def evaluate(self, env: dict[str, str]) -> bool:
        self._env, self._at = env, 0
        value = self._or()
        if self._at != len(self.tokens):
            raise Unsure("marker")
        return value

    def _peek(self) -> tuple[str, str]:
        return self.tokens[self._at] if self._at < len(self.tokens) else ("", "")

    def _or(self) -> bool:
        value = self._and()
        while self._peek() == ("word", "or"):
            self._at += 1
            right = self._and()
            value = value or right
        return value

    def _and(self) -> bool:
        value = self._atom()
        while self._peek() == ("word", "and"):
            self._at += 1
            right = self._atom()
            value = value and right
        return value

    def _value(self) -> tuple[str, str | None]:
        kind, value = self._peek()
        self._at += 1
        if kind == "str":
            return value[1:-1], None
        if kind == "word" and value in VARIABLES:
            return self._env[value], value
        raise Unsure("marker value")

    def _atom(self) -> bool:
        if self._peek() == ("paren", "("):
            self._at += 1
            value = self._or()
            if self._peek() != ("paren", ")"):
                raise Unsure("marker parentheses")
            self._at += 1
            return value
        lhs, lvar = self._value()
        kind, op = self._peek()
        if kind != "op":
            raise Unsure("marker operator")
        self._at += 1
        rhs, rvar = self._value()
        if lvar is None and rvar is None:
            raise Unsure("a marker comparing two strings")
        if "extra" in (lvar, rvar):
            lhs, rhs = canonical(lhs), canonical(rhs)
        return _compare(lhs, op, rhs)


def _compare(lhs: str, op: str, rhs: str) -> bool:
    """packaging's ``_eval_op``: a version comparison where ``op rhs`` is a specifier, else
    the string operators."""
    if op == "===":
        raise Unsure("===")
    if op not in ("in", "not in"):
        parts = _spec_parts(op + rhs)
        spec = None
        if parts is not None:
            try:
                spec = Specifier(*parts)
            except Unsure:
                spec = None
        if spec is not None:
            return spec.contains(Version(lhs))  # an invalid lhs: Unsure, as packaging fails
        # no specifier: the string operators (packaging refuses the ordering ones)
    if op == "==":
        return lhs == rhs
    if op == "!=":
        return lhs != rhs
    if op == "in":
        return lhs in rhs
    if op == "not in":
        return lhs not in rhs
    raise Unsure(f"marker {op} on strings")

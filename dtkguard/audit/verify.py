"""Installed files against RECORD, hashed in parallel, with the categories real installs need.

`verify(env)` plans one hashing job per RECORD row, hashes them on a pool of threads (hashlib
releases the GIL on large buffers; ``executor="process"`` is there to compare) and returns a
`Verification` of `Issue` records; `dtkguard.rules.files` turns those into findings.

Categories: ``modified`` (hash differs), ``shebang`` (a script
outside site-packages whose first line now points at this environment's interpreter: relocated),
``missing``, ``outside`` (a RECORD row that leaves the environment prefix or the root: never
opened), ``hashless`` (rows without a hash other than pip's ``.pyc`` rows, which are skipped),
``no-record`` (egg-info, distutils), ``distro`` (no INSTALLER: a distro package, whose RECORD is
known to be wrong after stripping; hand it to ``dpkg --verify``/``rpm -V``), ``editable``
(sources are not in RECORD), ``nonconforming`` (hex digests instead of urlsafe base64: accepted),
``unreadable`` (permission denied, not a regular file, a broken RECORD).
Files not in RECORD (uv never records ``.pyc``; runtime ``__pycache__``) are not looked for.
"""

from __future__ import annotations

import binascii
import hashlib
import os
import posixpath
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from dtkguard.env.dist import Dist
from dtkguard.env.environment import prefix_of
from dtkguard.env.filehash import hash_file
from dtkguard.env.root import ConfinementError, Root, child
from dtkguard.lightclass import field, record
from dtkguard.records import decode_digest, rows_of
from dtkguard.util.safe_read import TooLarge, read_capped, read_head, reason

#: a RECORD larger than this is not verified (torch's, ~20,000 files, is about 2 MiB)
RECORD_LIMIT = 16 << 20
#: the work of opening, reading and judging one file, in bytes hashed in the same time
FILE_COST = 32 << 10
#: batches per worker: few round trips to a worker, and enough to even out a slow one
BATCHES_PER_WORKER = 8
SIGNATURES = ("RECORD", "RECORD.jws", "RECORD.p7s")
_URLSAFE = bytes.maketrans(b"-_", b"+/")
_new = tuple.__new__  # Job(...) without the named tuple's Python-level __new__
_SIGNATURE_TAILS = tuple(f"/{name}" for name in SIGNATURES)


@record(frozen=True)
class Issue:
    """One verification result that is not "the file matches"."""

    kind: str
    dist: str
    version: str
    #: the file (or dist-info) as the target sees it
    path: str
    #: the RECORD (or dist-info) that says so
    record: str
    detail: str = ""
    evidence: dict[str, Any] = field(default_factory=dict, compare=False)


@record
class Verification:
    """Every issue found, and how much was checked."""

    issues: list[Issue] = field(default_factory=list)
    dists: int = 0
    files: int = 0
    bytes: int = 0
    matched: int = 0
    skipped_pyc: int = 0
    seconds: float = 0.0
    workers: int = 1
    executor: str = "thread"

    def summary(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for issue in self.issues:
            kinds[issue.kind] = kinds.get(issue.kind, 0) + 1
        return {
            "dists": self.dists,
            "files_hashed": self.files,
            "bytes_hashed": self.bytes,
            "matched": self.matched,
            "skipped_hashless_pyc": self.skipped_pyc,
            "issues": kinds,
            "seconds": round(self.seconds, 3),
            "workers": self.workers,
            "executor": self.executor,
        }


class Job(NamedTuple):
    """One file to hash: its host path, the expected digest and where it came from (a named
    tuple: one is made per RECORD row, at a fifth of a frozen dataclass's cost)."""

    host: str
    algo: str
    digest: bytes
    size: int | None
    owner: int
    inner: str
    script: bool
    #: the root the file is opened confined to ("": the host)
    confined: str


# --- RECORD rows -> jobs ---------------------------------------------------------------


def lexical(base: str, path: str) -> str | None:
    """``base/path`` normalised without touching the disk; None when ``..`` climbs above ``/``."""
    parts: list[str] = []
    full = path if path.startswith("/") else f"{base}/{path}"
    for part in full.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/" + "/".join(parts)


def under(path: str, top: str) -> bool:
    return top == "/" or path == top or path.startswith(top.rstrip("/") + "/")


def _plain(rel: str) -> bool:
    """A relative path whose every part is a name: ``lexical`` would only join it."""
    return (
        bool(rel)
        and rel[0] != "/"
        and rel[-1] != "/"
        and "//" not in rel
        and "/." not in rel
        and rel[0] != "."
    )


def _plain_site(site_inner: str, prefix: str) -> str | None:
    """``site_inner`` when a plain relative row (no ``.``/``..`` part, no empty part) is
    site/row: no lexical walk, and it is neither outside the prefix nor a script."""
    if lexical(site_inner, ".") != site_inner or not under(site_inner, prefix):
        return None
    return site_inner


def _sha256_row(
    plain_site: str | None, host: bool, owner: int
) -> Callable[[list[str] | None], Job | None]:
    """The job of a row as pip and uv write nearly all of them (``plain/path,sha256=<43
    urlsafe base64>,<size>`` under a site on the host root), or None: the full planning
    decides. Makes the same job the full planning makes of such a row."""
    if plain_site is None or not host:
        return lambda row: None
    base = f"{plain_site}/"

    def job(row: list[str] | None) -> Job | None:
        if row is None or len(row) != 3:
            return None
        rel, hash_field, size_field = row
        if (
            len(hash_field) != 50
            or not hash_field.startswith("sha256=")
            or rel.endswith(_SIGNATURE_TAILS)
            or not _plain(rel)
            or not size_field.isdecimal()
        ):
            return None
        try:  # `decode_digest` of a 43-character value, without its steps
            digest = binascii.a2b_base64(hash_field[7:].encode("ascii").translate(_URLSAFE) + b"=")
        except ValueError:  # binascii.Error too
            return None
        if len(digest) != 32:
            return None
        inner = base + rel
        return _new(Job, (inner, "sha256", digest, int(size_field), owner, inner, False, ""))

    return job


class _Planner:
    """Turns dists into jobs and dist-level issues."""

    def __init__(self, root: Root) -> None:
        self.root = root
        self.dirs: dict[str, str | None] = {}

    def host_path(self, inner: str) -> tuple[str, str] | None:
        """Host path of an inner file path, and the root to open it confined to ("": the
        host); directories resolved inside the root once each."""
        if self.root.is_host:
            return inner, ""
        directory, name = posixpath.split(inner)
        if directory not in self.dirs:
            try:
                self.dirs[directory] = str(self.root.resolve(directory))
            except (ConfinementError, OSError):
                self.dirs[directory] = None
        host = self.dirs[directory]
        return (os.path.join(host, name), str(self.root.path)) if host is not None else None

    def plan(
        self, dist: Dist, owner: int, jobs: list[Job], issues: list[Issue], out: Verification
    ) -> None:
        """Append the hashing jobs of ``dist``'s RECORD rows to ``jobs``, its issues to
        ``issues``."""
        where = dist.location
        record_inner = f"{where}/RECORD" if dist.record is not None else where

        def issue(kind: str, path: str, detail: str, **evidence: Any) -> None:
            issues.append(Issue(kind, dist.key, dist.version, path, record_inner, detail, evidence))

        if not self._verifiable(dist, issue):
            return
        text = self._record_text(dist, record_inner, issue)
        if text is None:
            return
        hashless, malformed, hexrows = self._plan_rows(dist, text, owner, jobs, issue, out)
        self._row_issues(hashless, malformed, hexrows, record_inner, issue)

    @staticmethod
    def _verifiable(dist: Dist, issue: Callable[..., None]) -> bool:
        """Whether ``dist`` has a RECORD worth reading; the issue of why not (and of an
        editable install, whose RECORD is read all the same)."""
        where = dist.location
        if dist.record is None:
            issue("no-record", where, "no RECORD (egg-info or distutils install)")
            return False
        direct = dist.direct_url or {}
        if isinstance(direct.get("dir_info"), dict) and direct["dir_info"].get("editable"):
            issue(
                "editable",
                where,
                f"editable install of {direct.get('url', '?')}: its sources are not in RECORD",
                url=direct.get("url"),
            )
        if dist.installer is None:
            issue(
                "distro",
                where,
                "no INSTALLER: a distro-owned package (its RECORD is not reliable after "
                "stripping); verify it with dpkg --verify or rpm -V",
            )
            return False
        return True

    @staticmethod
    def _record_text(dist: Dist, record_inner: str, issue: Callable[..., None]) -> str | None:
        record = dist.record  # looked up again: it may have gone since `_verifiable`
        if record is None:
            issue("unreadable", record_inner, "cannot read RECORD: it is gone")
            return None
        try:
            data = read_capped(record, RECORD_LIMIT, what="RECORD", follow=False, root=dist.root)
        except TooLarge as exc:  # not "malformed rows": the file was not read to its end
            issue("unreadable", record_inner, f"{exc}: not verified")
            return None
        except OSError as exc:
            issue("unreadable", record_inner, f"cannot read RECORD: {reason(exc)}")
            return None
        return data.decode("utf-8", "replace")

    def _plan_rows(
        self,
        dist: Dist,
        text: str,
        owner: int,
        jobs: list[Job],
        issue: Callable[..., None],
        out: Verification,
    ) -> tuple[list[str], int, int]:
        """A job per hashed row; (hashless paths, malformed rows, hex-digest rows)."""
        site_inner = self.root.inner(dist.site)
        prefix = prefix_of(site_inner)
        plain_site = _plain_site(site_inner, prefix)
        hashless: list[str] = []
        malformed = 0
        hexrows = 0
        sha256 = _sha256_row(plain_site, self.root.is_host, owner)
        for row in rows_of(text):
            if (job := sha256(row)) is not None:  # the usual row, planned in a few steps
                jobs.append(job)
                continue
            if row is None or len(row) != 3:
                malformed += 1
                continue
            rel, hash_field, size_field = row
            if rel.endswith(_SIGNATURE_TAILS) and ".dist-info" in rel:
                continue
            plain = plain_site is not None and _plain(rel)
            inner = f"{plain_site}/{rel}" if plain else lexical(site_inner, rel)
            if inner is None or (not plain and not under(inner, prefix)):
                _outside(issue, rel, prefix)
                continue
            if not hash_field:
                if rel.endswith(".pyc"):
                    out.skipped_pyc += 1
                else:
                    hashless.append(inner)
                continue
            algo, _, value = hash_field.partition("=")
            algo = algo.lower()
            if algo not in hashlib.algorithms_guaranteed or algo.startswith("shake"):
                issue("unreadable", inner, f"unsupported hash {algo!r} in RECORD")
                continue
            decoded = decode_digest(algo, value)
            if decoded is None:
                malformed += 1
                continue
            digest, was_hex = decoded
            hexrows += was_hex
            located = self.host_path(inner)
            if located is None:
                issue("unreadable", inner, "its directory cannot be resolved inside the root")
                continue
            size = int(size_field) if size_field.isdecimal() else None  # "²" is a digit
            script = not plain and not under(inner, site_inner)
            jobs.append(Job(located[0], algo, digest, size, owner, inner, script, located[1]))
        return hashless, malformed, hexrows

    def _row_issues(
        self,
        hashless: list[str],
        malformed: int,
        hexrows: int,
        record_inner: str,
        issue: Callable[..., None],
    ) -> None:
        if hashless:
            issue(
                "hashless",
                hashless[0],
                f"{len(hashless)} RECORD row(s) without a hash",
                files=hashless[:50],
                count=len(hashless),
            )
        if malformed:
            issue("unreadable", record_inner, f"{malformed} malformed RECORD row(s)")
        if hexrows:
            issue(
                "nonconforming",
                record_inner,
                f"{hexrows} RECORD row(s) use hex digests instead of urlsafe base64 (accepted)",
                count=hexrows,
            )
        for path in hashless:  # still report their absence
            located = self.host_path(path)
            if located and not self.root.lexists(located[0]):
                issue("missing", path, "listed in RECORD (without a hash) but not on disk")


def _outside(issue: Callable[..., None], rel: str, prefix: str) -> None:
    issue(
        "outside", rel, f"RECORD row points outside the environment ({prefix}); not read", row=rel
    )


def record_jobs(dist: Dist, root: Root) -> tuple[list[Job], list[Issue]]:
    """The hashing jobs of one dist's RECORD rows, and its dist-level issues (the same
    planning `verify` does; the guard's baseline records and compares with it)."""
    jobs: list[Job] = []
    issues: list[Issue] = []
    _Planner(root).plan(dist, 0, jobs, issues, Verification())
    return jobs, issues


# --- hashing ------------------------------------------------------------------------------


def _hash_batch(batch: Sequence[tuple[str, str, str]]) -> list[tuple[str, bytes, int, bytes]]:
    return [hash_file(host, algo, confined) for host, algo, confined in batch]


def _batches(jobs: Sequence[Job], workers: int) -> list[list[int]]:
    """Consecutive jobs in about ``BATCHES_PER_WORKER`` batches per worker of equal cost (a
    file costs its bytes plus ``FILE_COST``)."""
    costs = [(job.size or 0) + FILE_COST for job in jobs]
    budget = max(sum(costs) // max(workers * BATCHES_PER_WORKER, 1), 1)
    out: list[list[int]] = []
    current: list[int] = []
    spent = 0
    for i, cost in enumerate(costs):
        current.append(i)
        spent += cost
        if spent >= budget:
            out.append(current)
            current, spent = [], 0
    if current:
        out.append(current)
    return out


_LAUNCHER_LINES = re.compile(
    r"^(#.*|import (re|sys)|if __name__ == ['\"]__main__['\"]:"
    r"|sys\.argv\[0\] = re\.sub\(.*\)|sys\.argv\[0\] = sys\.argv\[0\]\[:-\d+\]"
    r"|(el)?if sys\.argv\[0\]\.endswith\(['\"][-\w.]+['\"]\):|sys\.exit\(\w+\(\)\))$"
)


def _entry_points(dist: Dist) -> dict[str, str]:
    """``{script name: "module:attr"}`` of a dist's console and gui scripts."""
    try:
        text = read_head(
            child(dist.root, dist.path_text, "entry_points.txt"),
            1 << 20,
            follow=False,
            root=dist.root,
        )
    except OSError:
        return {}
    out: dict[str, str] = {}
    section = ""
    for line in text.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").strip()
        elif "=" in line and section in ("console_scripts", "gui_scripts"):
            name, _, value = line.partition("=")
            out[name.strip()] = value.strip().split()[0]
    return out


def _shebang_relocated(job: Job, head: bytes, size: int, prefix: str, dist: Dist) -> bool:
    """A launcher script whose only change can be its first line, now naming this
    environment's interpreter (a relocated venv): the rest must be exactly the launcher an
    installer writes for the dist's entry point, or a plain launcher (a ``.data/scripts`` file
    such as dtkguard's own) that can do nothing but call one function of a module its own dist
    installs; a changed body is never excused."""
    if size > len(head):  # launchers are tiny; ``head`` holds the first 512 bytes
        return False
    line, _, body = head.partition(b"\n")
    interpreter = line[2:].strip().split(b" ")[0].decode("utf-8", "replace")
    if not interpreter.startswith(prefix.rstrip("/") + "/bin/python"):
        return False
    entry = _entry_points(dist).get(posixpath.basename(job.inner))
    if not entry:
        return _plain_launcher(body.decode("utf-8", "replace"), dist)
    if ":" not in entry:
        return False
    module, _, attr = entry.partition(":")
    wanted = f"from {module} import {attr.split('.')[0]}"
    seen_import = False
    for raw in body.decode("utf-8", "replace").splitlines():
        text = raw.strip()
        if not text:
            continue
        if text == wanted:
            seen_import = True
        elif not _LAUNCHER_LINES.match(text) or (
            text.startswith("sys.exit(") and text != f"sys.exit({attr.split('.')[0]}())"
        ):
            return False
    return seen_import


#: a plain launcher's lines: ``from MODULE import NAME``, then ``NAME()`` or ``sys.exit(NAME())``
_PLAIN_IMPORT = re.compile(r"^from ([A-Za-z_][\w.]*) import ([A-Za-z_]\w*)$")


def _plain_launcher(body: str, dist: Dist) -> bool:
    """``body`` is comments, ``import sys``, one ``from MODULE import NAME`` and one call of
    NAME, MODULE being a file of ``dist``'s own RECORD (verified with the rest of it)."""
    lines = [t for t in (raw.strip() for raw in body.splitlines()) if t and t[0] != "#"]
    if lines[:1] == ["import sys"]:
        lines = lines[1:]
    if len(lines) != 2 or not (found := _PLAIN_IMPORT.match(lines[0])):
        return False
    module, name = found.groups()
    if lines[1] not in (f"{name}()", f"sys.exit({name}())"):
        return False
    try:
        record = read_head(
            child(dist.root, dist.path_text, "RECORD"), 1 << 24, follow=False, root=dist.root
        )
    except OSError:
        return False
    stem = module.replace(".", "/")
    files = {f"{stem}.py", f"{stem}/__init__.py"}
    return any(
        row.partition(",")[0] in files for row in record.decode("utf-8", "replace").splitlines()
    )


def _progress(total_bytes: int, stream: Any) -> tuple[Callable[[int], None], Callable[[], None]]:
    """A rich progress bar on a terminal (stderr); no-op callbacks otherwise."""
    from dtkguard.util.console import progress_wanted

    if not progress_wanted(stream):
        return (lambda n: None), (lambda: None)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(file=stream),
        transient=True,
    )
    task = progress.add_task("verifying files", total=total_bytes or None)
    progress.start()
    return (lambda n: progress.advance(task, n)), progress.stop


def verify(
    dists: Iterable[Dist],
    root: Root,
    *,
    workers: int | None = None,
    executor: str = "auto",
    progress_stream: Any = None,
) -> Verification:
    """Check every RECORD row of ``dists``; files are read only inside ``root``.

    ``executor``: ``thread``, ``process`` or ``auto`` (threads: hashlib releases the GIL on
    large buffers; see benchmarks/bench_audit.py)."""
    start = time.perf_counter()
    dists = list(dists)
    workers = workers or os.cpu_count() or 1
    out = Verification(dists=len(dists), workers=workers)
    planner = _Planner(root)
    jobs: list[Job] = []
    for owner, dist in enumerate(dists):
        planner.plan(dist, owner, jobs, out.issues, out)
    out.executor = _choose_executor(executor, jobs, workers)
    advance, stop = _progress(
        sum(j.size or 0 for j in jobs), progress_stream if progress_stream else sys.stderr
    )
    found: dict[int, list[Issue]] = {}

    def judge(batch: int, indices: list[int], results: list[tuple[str, bytes, int, bytes]]) -> None:
        """Classify a batch as it comes back, while the others hash (issues in job order)."""
        issues: list[Issue] = []
        found[batch] = issues
        matched = hashed = 0
        for i, result in zip(indices, results, strict=True):
            job = jobs[i]
            if result[1] == job.digest and result[0] == "ok":  # the file matches: counted here
                matched += 1
                hashed += result[2]
                continue
            _classify(job, result, dists[job.owner], root, out, issues)
        out.files += matched
        out.bytes += hashed
        out.matched += matched
        advance(sum(r[2] for r in results))

    try:
        _hash_jobs(jobs, workers, out.executor, judge)
    finally:
        stop()
    for batch in sorted(found):
        out.issues.extend(found[batch])
    out.seconds = time.perf_counter() - start
    return out


def _choose_executor(executor: str, jobs: list[Job], workers: int) -> str:
    """``auto`` is ``thread``: with the per-file work cut down (one buffer per thread, no
    second read at the end of a file) threads matched or beat processes at every size
    measured, and pay no pickling (benchmarks/bench_audit.py --only verify)."""
    return "thread" if executor == "auto" else executor


def _hash_jobs(
    jobs: list[Job],
    workers: int,
    executor: str,
    judge: Callable[[int, list[int], list[tuple[str, bytes, int, bytes]]], None],
) -> None:
    """Hash every job, batch by batch here or on a pool of ``executor``; ``judge(batch number,
    job indices, results)`` runs here as each batch comes back."""
    batches = _batches(jobs, workers)

    def work(batch: list[int]) -> list[tuple[str, str, str]]:
        return [(jobs[i].host, jobs[i].algo, jobs[i].confined) for i in batch]

    if workers == 1 or len(batches) <= 1:
        for k, batch in enumerate(batches):
            judge(k, batch, _hash_batch(work(batch)))
        return
    if executor != "process":
        # small files' batches first for even workers, large files' for odd ones (`_on_threads`)
        order = sorted(range(len(batches)), key=lambda k: _bytes_per_file(jobs, batches[k]))
        for k, results in _on_threads([work(b) for b in batches], workers, order):
            judge(k, batches[k], results)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_hash_batch, work(b)): k for k, b in enumerate(batches)}
        for future in as_completed(futures):
            k = futures[future]
            judge(k, batches[k], future.result())


def _bytes_per_file(jobs: Sequence[Job], batch: list[int]) -> float:
    return sum(jobs[i].size or 0 for i in batch) / len(batch)


def _on_threads(
    batches: list[list[tuple[str, str, str]]], workers: int, order: Sequence[int] | None = None
) -> Iterator[tuple[int, list[tuple[str, bytes, int, bytes]]]]:
    """(batch number, results) of every batch as ``workers`` threads hash them, in the order
    they finish; a worker's error is raised here once the others have stopped. Plain threads:
    `concurrent.futures` imports `logging`, `traceback` and `tokenize` (~10 ms)."""
    import threading
    from collections import deque
    from queue import SimpleQueue

    # even workers take batches from the front of ``order``, odd ones from its back: with the
    # small files' batches in front, two threads hashing small files at once (each handing the
    # GIL to the other at every system call) is left for the last batches
    todo = deque(range(len(batches)) if order is None else order)
    take = threading.Lock()
    done: SimpleQueue[tuple[int, list[tuple[str, bytes, int, bytes]]] | BaseException | None]
    done = SimpleQueue()
    stop = threading.Event()

    def worker(number: int) -> None:
        pop = todo.popleft if number % 2 == 0 else todo.pop
        try:
            while not stop.is_set():
                with take:
                    k = pop() if todo else None
                if k is None:
                    break
                done.put((k, _hash_batch(batches[k])))
        except BaseException as exc:
            stop.set()
            done.put(exc)
        finally:
            done.put(None)

    threads = [
        threading.Thread(target=worker, args=(i,), name=f"dtkguard-hash-{i}", daemon=True)
        for i in range(workers)
    ]
    for thread in threads:
        thread.start()
    error: BaseException | None = None
    running = len(threads)
    try:
        while running:
            item = done.get()
            if item is None:
                running -= 1
            elif isinstance(item, BaseException):
                error = error or item
            elif error is None:
                yield item
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    if error is not None:
        raise error


class Running:
    """`verify` on a thread of its own (``audit`` hashes while it gathers its other inputs);
    `result` waits for it and raises its error, as a future's does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        import threading

        self._out: list[Verification | BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=args, kwargs=kwargs, name="dtkguard-verify", daemon=True
        )
        self._thread.start()

    def _run(self, *args: Any, **kwargs: Any) -> None:
        try:
            self._out.append(verify(*args, **kwargs))
        except BaseException as exc:
            self._out.append(exc)

    def result(self) -> Verification:
        self._thread.join()
        got = self._out[0]
        if isinstance(got, BaseException):
            raise got
        return got


def _classify(
    job: Job,
    result: tuple[str, bytes, int, bytes],
    dist: Dist,
    root: Root,
    out: Verification,
    issues: list[Issue],
) -> None:
    """Count ``job``'s file in ``out``; what is wrong with it goes to ``issues``."""
    status, digest, size, head = result
    record = f"{dist.location}/RECORD"

    def issue(kind: str, detail: str, **evidence: Any) -> None:
        issues.append(Issue(kind, dist.key, dist.version, job.inner, record, detail, evidence))

    if status == "symlink":  # a final symlink inside a confined root: resolve it there
        try:
            host = str(root.resolve(job.inner))
        except (ConfinementError, OSError):
            issue("unreadable", "symlink that cannot be resolved inside the root")
            return
        status, digest, size, head = hash_file(host, job.algo, str(root.path))
    if status == "missing":
        issue("missing", "listed in RECORD but not on disk", expected_size=job.size)
        return
    if status == "notfile":
        issue("modified", "not a regular file any more", expected_size=job.size)
        return
    if status.startswith("error:"):
        issue("unreadable", f"cannot read: {status[6:]}")
        return
    out.files += 1
    out.bytes += size
    if digest == job.digest:
        out.matched += 1
        return
    evidence: dict[str, object] = {
        "algorithm": job.algo,
        "recorded": job.digest.hex(),
        "actual": digest.hex(),
        "recorded_size": job.size,
        "actual_size": size,
    }
    prefix = prefix_of(root.inner(dist.site))
    if job.script and head and _shebang_relocated(job, head, size, prefix, dist):
        line = head.partition(b"\n")[0].decode("utf-8", "replace")
        issue("shebang", f"shebang rewritten ({line}): relocated environment", **evidence)
        return
    needed = _needed_now(job)
    if needed is not None:
        evidence["needed"] = needed
        links = ", ".join(needed) or "no library"
        issue("modified", f"content differs from RECORD; it now links {links}", **evidence)
        return
    issue("modified", "content differs from RECORD", **evidence)


def _needed_now(job: Job) -> list[str] | None:
    """The DT_NEEDED names of a modified shared object (None: not one, or not readable ELF):
    a swapped binary is named by what it links."""
    from dtkguard.elf import ElfError
    from dtkguard.env.binaries import looks_shared, read_binary

    if not looks_shared(job.inner):
        return None
    try:
        linkage = read_binary(job.host, job.confined)
    except (OSError, ElfError):
        return None
    return list(linkage.needed) if linkage is not None else None

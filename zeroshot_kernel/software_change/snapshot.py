"""The change as a git tree: what the checks run on, the reviewers judge and delivery commits.

A snapshot is the base revision's tree with exactly the files the change touched
(:func:`touched`: changed tracked files and new files, never ``.zeroshot/``, new build output
left out) replaced by their bytes in the worktree now. It is built with plumbing only, so
no hook, filter or attribute applies and the bytes recorded are the bytes written:
``hash-object --no-filters`` writes each file's blob (a link's blob is its target), a
temporary index (``GIT_INDEX_FILE``) starts from the base tree, ``update-index
--index-info`` sets the touched entries, ``write-tree`` names the result. Its id is what
the review gate records in the ledger, what the trust check compares the worktree with and
what delivery commits.

:func:`export` writes a tree into an empty folder from the object store (``ls-tree`` and
``cat-file --batch``: exact bytes, no checkout conversion), so a check runs on exactly the
snapshot: an ignored or excluded file of the worktree is not there.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from zeroshot_kernel.delivery.git import open_git, run_git
from zeroshot_kernel.exceptions import Refused
from zeroshot_kernel.safe_files import relative_parts
from zeroshot_kernel.software_change.secrets import Finding, secrets_in

RUN_DIR = ".zeroshot"
BUILD_DIRS = (
    "__pycache__",
    "build",
    "dist",
    "node_modules",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
)
BUILD_FILES = ("*.pyc", "*.pyo")
SNAPSHOT_TIMEOUT_S = 600.0
"""A large change hashes and exports many files; each git call may take this long."""
_NO_OBJECT = "0" * 40


class SnapshotError(Refused):
    """git could not answer what the snapshot needs (a damaged repository, a timeout)."""


def _git(
    cwd: Path, *args: str, env: Mapping[str, str] | None = None, stdin: bytes | None = None
) -> bytes:
    try:
        done = run_git(cwd, *args, env=env, stdin=stdin, timeout=SNAPSHOT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SnapshotError(f"git {' '.join(args[:2])} did not answer in {cwd}") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()
        raise SnapshotError(f"git {' '.join(args[:2])} failed in {cwd}: {said}")
    return done.stdout


def _split(data: bytes) -> list[str]:
    return [os.fsdecode(p) for p in data.split(b"\0") if p]


# --- what the change touched --------------------------------------------------------------


@dataclass(frozen=True)
class Touched:
    paths: list[str]
    """What the snapshot takes from the worktree: changed tracked files and new files."""
    left_out: list[str]
    """New build output, left out."""
    secrets: list[Finding]
    """Secret-looking files among ``paths`` (see :mod:`.secrets`): a change holding one is
    refused before it is briefed, checked or delivered."""


def _build_output(path: str) -> bool:
    *folders, name = path.split("/")
    return any(p in BUILD_DIRS or p.endswith(".egg-info") for p in folders) or any(
        fnmatch.fnmatch(name, pattern) for pattern in BUILD_FILES
    )


def touched(worktree: Path, base: str) -> Touched:
    """The files the change touched relative to ``base`` (deletions included)."""
    tracked = _split(_git(worktree, "diff", "--name-only", "-z", "--no-renames", base, "--"))
    new = set(_split(_git(worktree, "ls-files", "--others", "--exclude-standard", "-z")))
    mine = [
        p
        for p in dict.fromkeys([*tracked, *sorted(new)])
        if p != RUN_DIR and not p.startswith(RUN_DIR + "/")
    ]
    changed = set(tracked)
    left_out = [p for p in mine if p in new and p not in changed and _build_output(p)]
    out = set(left_out)
    paths = [p for p in mine if p not in out]
    return Touched(paths, left_out, secrets_in(worktree, paths))


# --- the tree -----------------------------------------------------------------------------


def _entry_mode(worktree: Path, path: str) -> str | None:
    """The tree mode of ``path`` in the worktree, or ``None`` when it is gone (or is
    something a tree cannot hold: a folder, a FIFO, a path through a link)."""
    parts = path.rstrip("/").split("/")
    folder = worktree
    for part in parts[:-1]:
        folder = folder / part
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return None
        except OSError:
            return None
    try:
        mode = os.lstat(folder / parts[-1]).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return "120000"
    if stat.S_ISREG(mode):
        return "100755" if mode & stat.S_IXUSR else "100644"
    return None


def _quoted(path: bytes) -> bytes:
    """``path`` as ``hash-object --stdin-paths`` reads it: C-quoted unless plain."""
    if path and not path.startswith(b'"') and all(32 <= b < 127 and b != 92 for b in path):
        return path
    escaped = b"".join(
        bytes([b]) if 32 <= b < 127 and b not in (34, 92) else b"\\%03o" % b for b in path
    )
    return b'"' + escaped + b'"'


def write_tree(worktree: Path, base: str, paths: Sequence[str]) -> str:
    """The tree of ``base`` with ``paths`` taken from the worktree (see the module doc)."""
    with tempfile.TemporaryDirectory(prefix="zeroshot-snapshot-") as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        _git(worktree, "read-tree", base, env=index)
        removed: list[str] = []
        kept: list[tuple[str, str]] = []
        sources: list[bytes] = []
        for number, path in enumerate(paths):
            mode = _entry_mode(worktree, path)
            if mode is None:
                removed.append(path.rstrip("/"))
                continue
            kept.append((mode, path))
            if mode == "120000":  # a link's blob is its target: hashed from a copy
                copy = Path(scratch) / f"link-{number}"
                copy.write_bytes(os.fsencode(os.readlink(worktree / path)))
                sources.append(os.fsencode(copy))
            else:
                sources.append(os.fsencode(path))
        blobs: list[str] = []
        if sources:
            listed = b"\n".join(_quoted(source) for source in sources) + b"\n"
            hashed = _git(
                worktree, "hash-object", "-w", "--no-filters", "--stdin-paths", stdin=listed
            )
            blobs = hashed.decode().split()
        if len(blobs) != len(kept):
            raise SnapshotError(f"git hash-object answered {len(blobs)} of {len(kept)} files")
        info = [f"0 {_NO_OBJECT}\t{path}".encode() for path in removed]
        info += [
            f"{mode} {blob}\t".encode() + os.fsencode(path)
            for (mode, path), blob in zip(kept, blobs, strict=True)
        ]
        if info:
            _git(
                worktree,
                "update-index",
                "-z",
                "--index-info",
                env=index,
                stdin=b"\0".join(info) + b"\0",
            )
        return _git(worktree, "write-tree", env=index).decode().strip()


@dataclass(frozen=True)
class Snapshot:
    tree: str
    touched: Touched


def take(worktree: Path, base: str) -> Snapshot:
    """The worktree's change relative to ``base`` now, as a tree and what it touched."""
    found = touched(worktree, base)
    return Snapshot(write_tree(worktree, base, found.paths), found)


def changed(worktree: Path, before: str, after: str) -> list[str]:
    """The paths whose entries differ between the trees ``before`` and ``after``."""
    if before == after:
        return []
    return _split(
        _git(worktree, "diff-tree", "-r", "-z", "--name-only", "--no-renames", before, after)
    )


def tree_of(worktree: Path, revision: str) -> str:
    return _git(worktree, "rev-parse", "--verify", "-q", f"{revision}^{{tree}}").decode().strip()


# --- a tree in a folder -------------------------------------------------------------------


def export(worktree: Path, tree: str, folder: Path) -> int:
    """Write ``tree`` (an object of the worktree's repository) into the empty ``folder``:
    files with their exact bytes and executable bits, links as links, submodules as empty
    folders. Returns how many files were written."""
    listed = _git(worktree, "ls-tree", "-r", "-z", "--full-tree", tree)
    blobs: list[tuple[str, str, tuple[str, ...]]] = []
    for entry in listed.split(b"\0"):
        if not entry:
            continue
        meta, _, raw = entry.partition(b"\t")
        mode, kind, sha = meta.decode().split()
        parts = relative_parts(os.fsdecode(raw))
        if ".git" in parts:
            raise SnapshotError(f"the tree {tree} holds a .git path")
        if kind == "blob":
            blobs.append((mode, sha, parts))
        else:
            folder.joinpath(*parts).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as wanted:
        wanted.write(b"".join(sha.encode() + b"\n" for _, sha, _ in blobs))
        wanted.seek(0)
        _write_blobs(worktree, folder, blobs, wanted)
    return len(blobs)


def _write_blobs(
    worktree: Path, folder: Path, blobs: list[tuple[str, str, tuple[str, ...]]], wanted: IO[bytes]
) -> None:
    reader = open_git(worktree, "cat-file", "--batch", stdin=wanted)
    out = reader.stdout
    assert out is not None  # a pipe was asked for
    try:
        for mode, sha, parts in blobs:
            header = out.readline().split()
            if len(header) != 3 or header[0].decode() != sha:
                raise SnapshotError(f"git cat-file did not give the blob {sha}")
            data = out.read(int(header[2]))
            out.read(1)
            target = folder.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            if mode == "120000":
                os.symlink(os.fsdecode(data), target)
                continue
            handle = os.open(
                target,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o755 if mode == "100755" else 0o644,
            )
            with os.fdopen(handle, "wb") as written:
                written.write(data)
    finally:
        out.close()
        reader.kill()
        reader.wait()

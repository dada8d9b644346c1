"""Secret-looking files in a change: found before anything is briefed, checked or delivered.

A change is refused when one of its files is a credential file by its path (``.env``,
``.aws/credentials``, ``.netrc``, an ssh key, a ``.pem``...) or holds a secret by its
content: the maintained ``detect-secrets`` library's pattern detectors (AWS, GitHub, Slack,
Stripe, private keys, passwords in URLs, ...) over the file's first
:data:`LIBRARY_SCANNED_BYTES`, and a private-key block (``-----BEGIN ... PRIVATE KEY``,
PGP and PuTTY keys included) anywhere in the file, however large. The library's
keyword and entropy heuristics are left out: they flag ordinary code (hashes in lock files,
``password = os.environ[...]``) and would refuse honest changes.

Callers: the review snapshot (before the checks and the reviewers: a secret fails the run
there, so it never reaches a model, a check's output or the ledger), the reviewers' briefs
(the names of every file, the content of what they quote) and the trust check before
delivery. A finding names the file and the kind of secret, never the secret.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import RegexBasedDetector

from zeroshot_kernel.safe_files import FileRefused, opened_below
from zeroshot_kernel.software_change import quoting

CREDENTIAL_NAMES = (
    ".env",
    ".env.*",
    "*.env",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "credentials*.json",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    ".vault-token",
)
"""File names that hold credentials whatever their content."""
CREDENTIAL_PATHS = (".aws/credentials", ".aws/config", ".docker/config.json", ".kube/config")
"""Paths (their last parts) that hold credentials whatever their content."""
NOT_SECRET = (".env.example", ".env.sample", ".env.template", ".env.dist", "*.pub")
LEFT_OUT_DETECTORS = frozenset(
    {
        "IPPublicDetector",  # an address is no credential
        "ArtifactoryDetector",  # matches ordinary words such as AP1234567890
        "CloudantDetector",  # these four are keyword heuristics: noisy and slow
        "IbmCloudIamDetector",
        "IbmCosHmacDetector",
        "SoftlayerDetector",
    }
)
LIBRARY_SCANNED_BYTES = 16 << 20
"""How much of a text file the library's detectors read (private keys are sought in all)."""
CHUNK_BYTES = 1 << 20
BATCH_BYTES = 1 << 20
"""How many bytes of small text files are scanned together."""
_OVERLAP = 4096
"""Bytes a chunk repeats from the one before, so a secret cut by a chunk edge is found."""
PRIVATE_KEY = re.compile(
    rb"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d"
)
_BINARY_PROBE = 8192


@dataclass(frozen=True)
class Finding:
    path: str
    kind: str
    """What makes it a secret (``credential file``, ``AWS Access Key``, ...), never the
    secret itself."""

    def __str__(self) -> str:
        return f"{quoting.name(self.path)} ({self.kind})"


@cache
def _detectors() -> tuple[RegexBasedDetector, ...]:
    classes: list[type[object]] = list(get_mapping_from_secret_type_to_class().values())
    return tuple(
        kind()
        for kind in sorted(classes, key=lambda c: c.__name__)
        if issubclass(kind, RegexBasedDetector) and kind.__name__ not in LEFT_OUT_DETECTORS
    )


def _names(patterns: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(fnmatch.translate(pattern) for pattern in patterns))


_NOT_SECRET = _names(NOT_SECRET)
_CREDENTIAL_NAME = _names(CREDENTIAL_NAMES)


def path_rule(path: str) -> str | None:
    """``credential file`` when ``path`` names one by its name or place."""
    name = path.rsplit("/", 1)[-1]
    if _NOT_SECRET.match(name):
        return None
    if _CREDENTIAL_NAME.match(name) or any(
        path == place or path.endswith("/" + place) for place in CREDENTIAL_PATHS
    ):
        return "credential file"
    return None


def scan_text(text: str) -> str | None:
    """The kind of the first secret the library's detectors find in ``text``."""
    for detector in _detectors():
        if any(True for _ in detector.analyze_string(text)):
            return str(detector.secret_type)
    return None


def scan_bytes(data: bytes, *, text: bool | None = None) -> str | None:
    """The kind of secret in ``data`` (one chunk of a file); ``text``: whether to run the
    library's detectors (default: unless it looks binary)."""
    if PRIVATE_KEY.search(data):
        return "private key"
    if text is None:
        text = b"\0" not in data[:_BINARY_PROBE]
    return scan_text(data.decode("utf-8", errors="replace")) if text else None


def scan_file(folder: Path, path: str) -> str | None:
    """The kind of secret in ``folder/path`` by its path or its content. Read without
    following a link; anything but a regular file (a link, a FIFO) is only named."""
    found = path_rule(path)
    if found is not None:
        return found
    try:
        with opened_below(folder, path) as handle:
            return _scan_open(handle)
    except (FileRefused, OSError):
        return None


def _scan_open(handle: int, head: bytes = b"") -> str | None:
    """Scan an open file chunk by chunk (``head``: its first bytes, already read)."""
    offset, text, tail = 0, True, b""
    while True:
        chunk = head or os.read(handle, CHUNK_BYTES)
        head = b""
        if not chunk:
            return None
        if offset == 0:
            text = b"\0" not in chunk[:_BINARY_PROBE]
        found = scan_bytes(tail + chunk, text=text and offset < LIBRARY_SCANNED_BYTES)
        if found is not None:
            return found
        offset += len(chunk)
        tail = chunk[-_OVERLAP:]


@dataclass
class _Batch:
    """Small text files waiting to be scanned together."""

    members: list[tuple[str, bytes]] = field(default_factory=list)
    size: int = 0

    def add(self, path: str, data: bytes) -> None:
        self.members.append((path, data))
        self.size += len(data)

    def scan(self) -> list[Finding]:
        """The secrets among the members (then none are left)."""
        found = []
        joined = b"\n\0\n".join(data for _, data in self.members)
        if self.members and scan_bytes(joined, text=True) is not None:
            for member, data in self.members:
                kind = scan_bytes(data, text=True)
                if kind is not None:
                    found.append(Finding(member, kind))
        self.members, self.size = [], 0
        return found


def secrets_in(folder: Path, paths: Iterable[str]) -> list[Finding]:
    """Every secret-looking file among ``paths`` (relative to ``folder``). Small text files
    are scanned together (:data:`BATCH_BYTES` at a time, each member again alone when the
    batch holds a secret): thousands of new files cost a few scans, not thousands."""
    found: list[Finding] = []
    batch = _Batch()
    root = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for path in paths:
            kind = path_rule(path) or _scan_member(root, path, batch)
            if kind is not None:
                found.append(Finding(path, kind))
            if batch.size >= BATCH_BYTES:
                found += batch.scan()
    finally:
        os.close(root)
    return found + batch.scan()


def _scan_member(root: int, path: str, batch: _Batch) -> str | None:
    """The kind of secret in ``path`` below the open folder ``root``; a small text file
    is added to ``batch`` instead."""
    try:
        with opened_below(root, tuple(path.split("/"))) as handle:
            head = os.read(handle, CHUNK_BYTES)
            if len(head) < CHUNK_BYTES and b"\0" not in head[:_BINARY_PROBE]:
                batch.add(path, head)
                return None
            return _scan_open(handle, head)
    except (FileRefused, OSError):
        return None


def refusal(findings: Iterable[Finding]) -> str:
    """The one line that refuses a change holding ``findings``."""
    return "refusing secret-looking file(s): " + ", ".join(map(str, findings))

"""What one file may make in memory, and what one command may read: the bounds behind "every documented
maximum under 1 GiB" (issue 36 item 5: a 200 MB snapshot of 50 million notes took 3.96 GB; `merge` of
two 250 MB snapshots ended in a MemoryError).

- A JSON input (snapshot, run record) holds at most :data:`MAX_JSON_VALUES` values (a packed cluster
  :data:`MAX_PACKED_VALUES`), and none longer than :data:`MAX_JSON_RUN_BYTES`, both counted on its bytes
  before it is decoded (a value costs about 100 bytes once decoded: 5.5 million notes in 236 MB reached
  1.05 GB; a plain merged cluster of 1,024 hosts, 83 MB, holds 2.8 million).
- One command reads at most :data:`COMMAND_BYTES` from files of :data:`LARGE_FILE_BYTES` or more (a
  cluster, a huge paste), counted before each is read: two snapshots of 250 MB are refused at the second,
  before it is read. Per-host snapshots (tens of kB, 20 MB for a host of 256 GPUs and 256 NICs) are
  not counted: `merge` reads 10,000 of them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from topomap.base.errors import TopomapError

MAX_JSON_VALUES = 3_500_000
#: A packed cluster (JSON Lines, topomap.model.pack) decodes line by line and its hosts share their
#: parts: about 420 values a host, 4.2 million at 10,000 hosts (0.34 GiB loaded), so it may hold twice
#: as many.
MAX_PACKED_VALUES = 8_000_000
#: The longest value a JSON input holds (a name, a note, a run's series of 20,000 samples: 0.4 MB).
#: Longer, one value alone would cost its length twice over (the bytes and the string) and more in every
#: view that shows it: `show` of a snapshot with a 250 MB note reached 2.1 GB.
MAX_JSON_RUN_BYTES = 1024 * 1024
LARGE_FILE_BYTES = 16 * 1024 * 1024
COMMAND_BYTES = 192 * 1024 * 1024
_READ: ContextVar[list[int] | None] = ContextVar("topomap_large_bytes_read", default=None)


def json_values(data: bytes) -> int:
    """About how many values JSON bytes hold (commas, arrays and objects): never fewer than the real
    count, more when strings hold commas. A few passes of C over the bytes: 0.2 s for 256 MB."""
    return data.count(b",") + data.count(b"[") + data.count(b"{")


def check_json_values(
    data: bytes, where: str, what: str, exc: type[TopomapError] = TopomapError, most: int = MAX_JSON_VALUES
) -> None:
    """Refuse, before decoding, JSON of more than ``most`` values or with a value past
    :data:`MAX_JSON_RUN_BYTES`."""
    check_json_runs(data, where, what, exc)
    n = json_values(data)
    if n > most:
        raise exc(
            f"{where}: about {n:,} JSON values, more than any {what} holds ({most:,} at most)",
            hint="is this the right file? (a packed cluster of 10,000 hosts holds about 4.2 million)",
        )


def check_json_runs(data: bytes, where: str, what: str, exc: type[TopomapError] = TopomapError) -> None:
    """Refuse, before decoding, JSON with a stretch of more than :data:`MAX_JSON_RUN_BYTES` between two
    quotes (a string, or numbers and blanks between two strings): windows of half that length are
    looked at, each with one memchr for a quote, so 256 MB cost a few milliseconds. An escaped quote
    (``\\"``) does not end a stretch (it does not end a string)."""
    if len(data) <= MAX_JSON_RUN_BYTES:
        return
    probe = data.replace(b'\\"', b"") if b'\\"' in data else data
    half = MAX_JSON_RUN_BYTES // 2
    start = 0
    while start + half <= len(probe):
        if probe.find(b'"', start, start + half) >= 0:
            start += half
            continue
        first = probe.rfind(b'"', 0, start) + 1
        end = probe.find(b'"', start + half)
        end = len(probe) if end < 0 else end
        if end - first > MAX_JSON_RUN_BYTES:
            raise exc(
                f"{where}: a value of {(end - first) / 1024 / 1024:.1f} MiB (near byte {first:,}), longer "
                f"than any {what} holds (1 MiB at most)",
                hint="is this the right file?",
            )
        start = end + 1


@contextlib.contextmanager
def command_budget() -> Iterator[None]:
    """While a command runs: the large files it reads are counted against :data:`COMMAND_BYTES`."""
    token = _READ.set([0])
    try:
        yield
    finally:
        _READ.reset(token)


def charge(path: Path, size: int, what: str, exc: type[TopomapError] = TopomapError) -> None:
    """Count a file of ``size`` bytes about to be read; past the command's budget, refuse it unread."""
    read = _READ.get()
    if read is None or size < LARGE_FILE_BYTES:
        return
    if read[0] + size > COMMAND_BYTES:
        mib = 1024 * 1024
        raise exc(
            f"{path}: {size / mib:.0f} MiB more, after {read[0] / mib:.0f} MiB of large files read, is more "
            f"than the {COMMAND_BYTES // mib} MiB one command reads",
            hint=f"is this the right {what}? a merged cluster of 10,000 hosts is about 60 MB",
        )
    read[0] += size

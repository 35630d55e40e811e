"""A hang guard for tests of bounded work (the speed itself is measured in bench/): fails a block still
running after a number of seconds."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def within(seconds: int, doing: str = "running") -> Iterator[None]:
    """Fail (AssertionError) when the block is still ``doing`` after ``seconds``."""

    def late(signum: int, frame: object) -> None:
        raise AssertionError(f"still {doing} after {seconds} s")

    old = signal.signal(signal.SIGALRM, late)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)

"""CPU-set notations: Linux cpulists (``0-31,64-95``), 64-bit mask words, comma-grouped hex masks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# Linux's largest configurable NR_CPUS is 8192; anything past this is not a CPU set.
MAX_CPU_ID = 65535


def parse_cpulist(text: str) -> list[int]:
    """``"0-3,8"`` → [0, 1, 2, 3, 8]. Raises ValueError on malformed input or CPU ids past
    :data:`MAX_CPU_ID`."""
    cpus: set[int] = set()
    text = text.strip()
    if not text:
        return []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo_s, hi_s = part.split("-", 1)
            lo, hi = int(lo_s), int(hi_s)
            if hi < lo or lo < 0:
                raise ValueError(f"bad CPU range {part!r}")
            if hi > MAX_CPU_ID:
                raise ValueError(f"CPU {hi} is past any machine (at most {MAX_CPU_ID})")
            cpus.update(range(lo, hi + 1))
        else:
            cpu = int(part)
            if not 0 <= cpu <= MAX_CPU_ID:
                raise ValueError(f"CPU {cpu} is past any machine (at most {MAX_CPU_ID})")
            cpus.add(cpu)
    return sorted(cpus)


def format_cpulist(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 3, 8] → ``"0-3,8"`` (the form nvidia-smi and sysfs print)."""
    ordered = sorted(set(cpus))
    out: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def cpus_from_words(words: Sequence[int], bits: int = 64) -> list[int]:
    """CPU ids set in mask words, word 0 holding CPUs 0..bits-1 (NVML affinity arrays)."""
    return [w * bits + b for w, word in enumerate(words) for b in range(bits) if (int(word) >> b) & 1]


def cpus_from_hex_mask(mask: str) -> list[int]:
    """``"000000ff,ffff0000,00ffffff"`` (most significant word first, as NCCL and sysfs write) or
    hwloc's ``"0x00000303,,0x03030303"`` (each word may carry ``0x``; an empty word is zero) → ids.

    Each comma-separated word is 32 bits wide (a word of more than 8 digits is as wide as its
    digits). Linear in the mask length; raises ValueError on a non-hex digit or a CPU id past
    :data:`MAX_CPU_ID`.
    """
    out: list[int] = []
    shift = 0
    for word in reversed(mask.strip().split(",")):
        w = word.strip()
        if w.startswith(("0x", "0X")):
            w = w[2:]
        for k, ch in enumerate(reversed(w)):
            d = int(ch, 16)
            if d:
                base = shift + 4 * k
                if base > MAX_CPU_ID:
                    raise ValueError(f"CPU mask sets CPU {base} or above (at most {MAX_CPU_ID})")
                out += [base + b for b in range(4) if (d >> b) & 1]
        shift += 32 if len(w) <= 8 else 4 * len(w)
    return sorted(out)

"""CPU-set notations: Linux cpulists (``0-31,64-95``), 64-bit mask words, comma-grouped hex masks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def parse_cpulist(text: str) -> list[int]:
    """``"0-3,8"`` → [0, 1, 2, 3, 8]. Raises ValueError on malformed input."""
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
            if hi < lo:
                raise ValueError(f"bad CPU range {part!r}")
            cpus.update(range(lo, hi + 1))
        else:
            cpus.add(int(part))
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
    """``"000000ff,ffff0000,00ffffff"`` (most significant group first, as NCCL/sysfs write) → ids."""
    cleaned = mask.replace(",", "").strip()
    if cleaned.startswith(("0x", "0X")):
        cleaned = cleaned[2:]
    if not cleaned:
        return []
    value = int(cleaned, 16)
    return [i for i in range(value.bit_length()) if (value >> i) & 1]

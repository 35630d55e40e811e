"""NCCL's path order (topomap/transport/rules.py): a snapshot's path codes rank by base/links's reading."""

from __future__ import annotations

from topomap.transport.rules import PATH_ORDER, path_rank


def test_nv_codes_rank_as_nvl_and_others_as_named() -> None:
    nvl = PATH_ORDER.index("NVL")
    assert path_rank("NV7") == path_rank("NV18") == path_rank("NVL") == nvl
    assert path_rank("NODE") == path_rank("PHB")
    assert path_rank("PIX") < path_rank("PXB") < path_rank("PHB") < path_rank("SYS")
    assert path_rank("NVX") == path_rank("SYS")  # no path code: NCCL's worst, not NVLink

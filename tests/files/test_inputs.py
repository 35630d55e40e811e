"""Safe reading (topomap.files.inputs) and snapshot consistency (topomap.model.validate): issue 14."""

from __future__ import annotations

import codecs
import os
import threading
import time
from pathlib import Path

import msgspec
import pytest

from tests.fakes.flows import one_arrow
from topomap.base.errors import TopomapError
from topomap.files.inputs import decode_text, read_bytes
from topomap.files.yamlfile import read_yaml
from topomap.importers import import_file, import_text, load_any
from topomap.model.codec import decode_snapshot, encode_snapshot, load_snapshot, to_builtins

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
PASTE = "rtx3090-2gpu-nv4-club3090-rig-report.txt"


def one_line(err: pytest.ExceptionInfo[TopomapError], name: str) -> str:
    msg = str(err.value)
    assert "\n" not in msg and name in msg
    return msg


@pytest.mark.parametrize("loader", [load_any, import_file, load_snapshot, lambda p: read_yaml(p, "flow file")])
def test_character_device_refused_before_reading(loader: object) -> None:
    assert callable(loader)
    t = time.monotonic()
    with pytest.raises(TopomapError) as err:
        loader("/dev/zero")
    assert "character device" in one_line(err, "/dev/zero") and time.monotonic() - t < 1


def test_fifo_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    box: list[BaseException | None] = []

    def go() -> None:
        try:
            load_any(fifo)
            box.append(None)
        except BaseException as e:  # handed to the test thread
            box.append(e)

    th = threading.Thread(target=go, daemon=True)
    th.start()
    th.join(5)
    assert box and isinstance(box[0], TopomapError) and "FIFO" in str(box[0])


def test_directory_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TopomapError, match="is a directory"):
        load_any(tmp_path)
    with pytest.raises(TopomapError, match="cannot read"):
        load_any(tmp_path / "nope.txt")


def test_size_cap_checked_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with open(big, "wb") as fh:  # sparse: nothing to read if the cap is checked first
        fh.truncate(300 * 1024 * 1024)
    with pytest.raises(TopomapError) as err:
        load_any(big)
    assert "larger than any" in one_line(err, "big.txt")
    small = tmp_path / "s.txt"
    small.write_bytes(b"x" * 100)
    with pytest.raises(TopomapError, match="larger than any flow file"):
        read_bytes(small, "flow file", 99)
    assert read_bytes(small, "flow file", 100) == b"x" * 100


@pytest.mark.parametrize(
    "encode",
    [
        lambda t: codecs.BOM_UTF8 + t.encode(),
        lambda t: codecs.BOM_UTF16_LE + t.encode("utf-16-le"),  # PowerShell `>`
        lambda t: codecs.BOM_UTF16_BE + t.encode("utf-16-be"),
        lambda t: t.encode("utf-16-le"),  # no byte-order mark
        lambda t: codecs.BOM_UTF32_LE + t.encode("utf-32-le"),
    ],
)
def test_bom_and_utf16_pastes_import_like_utf8(real: Path, tmp_path: Path, encode: object) -> None:
    assert callable(encode)
    text = (real / "nvidia-smi" / PASTE).read_text()
    f = tmp_path / "paste.txt"
    f.write_bytes(encode(text))
    s = import_file(f)
    assert [g.index for g in s.gpus] == [0, 1] and s.pairs[0].path == "NV4"


def test_bom_snapshot_and_yaml(tmp_path: Path) -> None:
    snap = SAMPLES / "snapshots" / "dgx1-v100.json"
    f = tmp_path / "s.json"
    f.write_bytes(codecs.BOM_UTF8 + snap.read_bytes())
    assert len(load_snapshot(f).gpus) == 8 and len(load_any(f).gpus) == 8
    f.write_bytes(codecs.BOM_UTF16_LE + snap.read_text().encode("utf-16-le"))
    assert len(load_snapshot(f).gpus) == 8
    y = tmp_path / "f.yaml"
    y.write_bytes(codecs.BOM_UTF16_LE + "a: 1\n".encode("utf-16-le"))
    assert read_yaml(y, "flow file").data == {"a": 1}


def test_nul_byte_is_binary_and_names_the_line() -> None:
    with pytest.raises(TopomapError, match=r"^x.txt:3: binary content"):
        decode_text(b"one\ntwo\nthr\0ee\n", "x.txt")


# --- snapshot consistency ---------------------------------------------------------------------


def sample(name: str = "azure-ndv4.json") -> dict[str, object]:
    raw = msgspec.json.decode((SAMPLES / "snapshots" / name).read_bytes())
    assert isinstance(raw, dict)
    return raw


def refused(raw: object, *fragments: str) -> str:
    with pytest.raises(TopomapError) as err:
        decode_snapshot(msgspec.json.encode(raw), "s.json")
    msg = one_line(err, "s.json")
    for f in fragments:
        assert f in msg, msg
    return msg


def test_pci_self_parent_and_cycle_refused() -> None:
    raw = sample()
    pci = raw["pci"]
    assert isinstance(pci, list)
    pci[3]["parent"] = pci[3]["id"]
    refused(raw, f"pci[3].parent: {pci[3]['id']!r} is its own parent")
    raw = sample()
    pci = raw["pci"]
    assert isinstance(pci, list)
    child = next(d for d in pci if d["parent"] is not None and d["kind"] == "gpu")
    parent = next(d for d in pci if d["id"] == child["parent"])
    parent["parent"] = child["id"]
    refused(raw, "cycle")
    raw = sample()
    pci = raw["pci"]
    assert isinstance(pci, list)
    child["parent"] = "0000:99:00.0"
    pci[:] = [child if d["id"] == child["id"] else d for d in pci]
    refused(raw, "names no device")


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("a", "gpu99", "pairs[0].a: 'gpu99': no such device"),
        ("b", "cpu0", "not a device id"),
        ("path", "NVX", "pairs[0].path: 'NVX' is not NV<n>"),
        ("path", "NV65", "at most 64 per pair"),
        ("nvlinks", 100000, "pairs[0].nvlinks: 100000"),
        ("pcie_path", "NV2", "pcie_path"),
    ],
)
def test_pairs_must_name_devices_and_known_classes(field: str, value: object, fragment: str) -> None:
    raw = sample()
    pairs = raw["pairs"]
    assert isinstance(pairs, list)
    pairs[0][field] = value
    refused(raw, fragment)


def test_duplicates_refused() -> None:
    raw = sample()
    nics = raw["nics"]
    assert isinstance(nics, list)
    nics[1]["name"] = nics[0]["name"]
    refused(raw, "nics[1].name", "is also nics[0].name")
    raw = sample()
    gpus = raw["gpus"]
    assert isinstance(gpus, list)
    gpus[1]["index"] = 0
    refused(raw, "gpus[1].index: 0 is also gpus[0].index")
    raw = sample()
    pairs = raw["pairs"]
    assert isinstance(pairs, list)
    pairs[1] = {**pairs[0], "a": pairs[0]["b"], "b": pairs[0]["a"]}
    refused(raw, "pairs[1]: gpu1/gpu0 appears twice")


def test_absurd_numbers_refused() -> None:
    raw = sample()
    nics = raw["nics"]
    assert isinstance(nics, list)
    nics[0]["speed_gbit_s"] = 1e300
    refused(raw, "nics[0].speed_gbit_s: 1e+300 is outside")
    raw = sample()
    gpus = raw["gpus"]
    assert isinstance(gpus, list)
    gpus[0]["nvlinks"] = [{"link": i, "active": True} for i in range(65)]
    refused(raw, "gpus[0].nvlinks: 65 NVLinks")
    raw = sample()
    raw["gpus"] = [{"index": i} for i in range(257)]
    raw["pairs"], raw["pci"], raw["nvswitches"] = [], [], []
    refused(raw, "257 GPUs in one host (at most 256)")


def test_deep_json_and_nested_clusters_refused() -> None:
    deep = b'{"schema": "topomap.snapshot/1", "x": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    with pytest.raises(TopomapError, match="nested deeper"):
        decode_snapshot(deep, "s.json")
    host = sample()
    cluster = {"schema": host["schema"], "source": {"kind": "merge", "origin": "x", "tool": "t"}, "members": [host]}
    decode_snapshot(msgspec.json.encode(cluster), "s.json")
    refused({**cluster, "members": [cluster]}, "members[0]: a cluster inside a cluster")
    refused({**host, "members": [host]}, "only a merged cluster")


def test_every_sample_is_consistent_and_round_trips() -> None:
    for f in sorted((SAMPLES / "snapshots").glob("*.json")):
        s = load_snapshot(f)
        assert decode_snapshot(encode_snapshot(s), f.name) == s
        assert to_builtins(s)["schema"] == "topomap.snapshot/1"


def test_importers_validate_before_returning() -> None:
    # Two NICs with one name in a pasted legend: the views key NICs by name.
    text = (
        "\tGPU0\tNIC0\tNIC1\n"
        "GPU0\t X \tPIX\tPIX\n"
        "NIC0\tPIX\t X \tPIX\n"
        "NIC1\tPIX\tPIX\t X \n\n"
        "NIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_0\n"
    )
    with pytest.raises(TopomapError, match=r"paste.txt: nics\[1\].name: 'mlx5_0' is also nics\[0\].name"):
        import_text(text, "paste.txt")


def test_pci_gpu_or_nic_must_be_a_listed_device() -> None:
    # A renumbered bus id leaves a `gpu` PCI function no GPU owns: the diagram could not label it.
    raw = sample()
    pci = raw["pci"]
    assert isinstance(pci, list)
    k, dev = next((k, d) for k, d in enumerate(pci) if d["kind"] == "gpu")
    dev["id"] = "0000:ee:00.0"
    for d in pci:
        if d["parent"] == pci[k]["id"]:
            d["parent"] = dev["id"]
    refused(raw, f"pci[{k}]: gpu '0000:ee:00.0' is no GPU's pci_bus_id")


def test_xml_declaring_another_encoding_is_read_as_decoded(real: Path, tmp_path: Path) -> None:
    text = (real / "hwloc" / "nvidia-dgx2h.xml").read_text()
    f = tmp_path / "t.xml"
    f.write_bytes(codecs.BOM_UTF16_LE + text.replace('encoding="UTF-8"', 'encoding="UTF-16"').encode("utf-16-le"))
    assert len(import_file(f).gpus) == 16
    assert len(import_text(text.replace('encoding="UTF-8"', 'encoding="no-such"'), "t.xml").gpus) == 16


def test_absurd_pcie_link_refused(real: Path) -> None:
    text = (real / "nccl-xml" / "aws-p5-48xlarge.xml").read_text()
    with pytest.raises(TopomapError, match=r"pci\[\d+\]\.link_width: 100000 \(PCIe width is 0 to 32\)"):
        import_text(text.replace('link_width="16"', 'link_width="100000"', 1), "p5.xml")


def test_flow_host_path_to_a_device_is_refused(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from topomap.cli import app

    flow = tmp_path / "f.yaml"
    flow.write_text(
        one_arrow("lot:memory", "lot:gpu0", kinds=("input", "compute"), name="f", hosts={"lot": "/dev/zero"})
    )
    t = time.monotonic()
    res = CliRunner().invoke(app, ["map", str(flow)])
    assert res.exit_code == 2 and "/dev/zero: is a character device" in res.output and time.monotonic() - t < 5


def test_numbers_of_thousands_of_digits_refused() -> None:
    text = (SAMPLES / "snapshots" / "dgx1-v100.json").read_bytes()
    with pytest.raises(TopomapError, match=r"^s\.json: not a topomap snapshot \(schema 'topomap\.snapshot/1111"):
        decode_snapshot(text.replace(b"snapshot/1", b"snapshot/" + b"1" * 5000, 1), "s.json")
    with pytest.raises(TopomapError, match=r"^s\.json: not valid JSON \(Integer value out of range"):
        decode_snapshot(text.replace(b'"index": 0', b'"index": ' + b"7" * 5000, 1), "s.json")


def test_nvlink_count_of_thousands_of_digits_is_not_a_path() -> None:
    raw = sample()
    pairs = raw["pairs"]
    assert isinstance(pairs, list)
    pairs[0]["path"] = "NV" + "1" * 5000
    refused(raw, "pairs[0].path", "is not NV<n>")


def test_absurdly_long_names_refused(real: Path) -> None:
    text = (real / "nccl-xml" / "ibm-cloud-gx3d-h100-8gpu-vsi.xml").read_text()
    with pytest.raises(TopomapError, match=r"nics\[\d\]\.name: 5000 characters \(1 to 256\)"):
        import_text(text.replace('name="mlx5_7"', 'name="' + "1" * 5000 + '"'), "x.xml")
    raw = sample()
    gpus = raw["gpus"]
    assert isinstance(gpus, list)
    gpus[0]["name"] = "A" * 257
    refused(raw, "gpus[0].name: 257 characters (at most 256)")


def test_numbers_are_checked_while_decoding_with_the_path_and_the_bound() -> None:
    """Decoding checks every number against the model's bounds (I64, Rate) in one pass; the
    message names the field, the value and the bound, as the walk over importer output does."""
    raw = sample()
    gpus = raw["gpus"]
    assert isinstance(gpus, list)
    gpus[0]["index"] = 2**63
    refused(raw, "s.json: gpus[0].index: 9223372036854775808 does not fit in 64 bits")
    raw = sample()
    nics = raw["nics"]
    assert isinstance(nics, list)
    nics[0]["speed_gbit_s"] = -1
    refused(raw, "s.json: nics[0].speed_gbit_s: -1 is outside 0 to 1e+06")
    with pytest.raises(TopomapError, match=r"^s\.json: a snapshot is a JSON object, got `array`$"):
        decode_snapshot(b"[1, 2]", "s.json")
    with pytest.raises(TopomapError, match=r"^s\.json: missing or invalid `schema`"):
        decode_snapshot(msgspec.json.encode({k: v for k, v in sample().items() if k != "schema"}), "s.json")


def test_a_snapshot_cut_short_says_so_with_a_hint() -> None:
    text = (SAMPLES / "snapshots" / "dgx1-v100.json").read_bytes()[:300]
    with pytest.raises(TopomapError) as err:
        decode_snapshot(text, "s.json")
    assert str(err.value) == "s.json: not valid JSON (Input data was truncated)"
    assert err.value.hint is not None and err.value.hint.startswith("is the file complete?")

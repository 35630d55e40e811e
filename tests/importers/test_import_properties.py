"""Property tests: random valid matrices in the layouts seen in real pastes are recovered exactly;
mangled pastes either import or fail with ImportFailure — never another exception."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topomap.base.errors import TopomapError
from topomap.importers import import_text
from topomap.model.snapshot import Gpu, Nic, Pair, Snapshot, Source
from topomap.render.matrix import render_matrix

PCIE = ["PIX", "PXB", "PHB", "NODE", "SYS"]


@st.composite
def machines(draw: st.DrawFn) -> Snapshot:
    n_gpu = draw(st.integers(1, 8))
    n_nic = draw(st.integers(0, 4))
    cpus = st.one_of(st.just(""), st.just("N/A"), st.sampled_from(["0-3", "0-31,64-95", "56", "6,14,22,30"]))
    gpus = [
        Gpu(
            index=i,
            cpu_affinity=(lambda c: None if c == "N/A" else c)(draw(cpus)),
            numa_node=draw(st.one_of(st.none(), st.integers(0, 7))),
            gpu_numa_node=draw(st.one_of(st.none(), st.integers(0, 9))),
        )
        for i in range(n_gpu)
    ]
    nics = [Nic(index=i, name=f"mlx5_{i}") for i in range(n_nic)]
    ids = [f"gpu{i}" for i in range(n_gpu)] + [f"nic{i}" for i in range(n_nic)]
    pairs = []
    for x, a in enumerate(ids):
        for b in ids[x + 1 :]:
            if a.startswith("gpu") and b.startswith("gpu"):
                code = draw(st.one_of(st.sampled_from(PCIE), st.integers(1, 18).map(lambda n: f"NV{n}")))
            else:
                code = draw(st.sampled_from(PCIE))
            pairs.append(Pair(a=a, b=b, path=code, nvlinks=int(code[2:]) if code.startswith("NV") else 0))
    return Snapshot(source=Source(kind="nvidia-smi", origin="gen", tool="t"), gpus=gpus, nics=nics, pairs=pairs)


def layouts(text: str, draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        text = text.expandtabs(8)  # what a copy from a terminal gives
    if draw(st.booleans()):
        text = text.split("\n\nLegend:")[0] + "\n"  # legend not copied
    if draw(st.booleans()):
        text = "$ nvidia-smi topo -m\n" + text  # prompt line
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


def facts(s: Snapshot) -> tuple[object, ...]:
    return (
        [(p.a, p.b, p.path) for p in s.pairs],
        [(g.index, g.cpu_affinity, g.numa_node, g.gpu_numa_node) for g in s.gpus],
        [(n.index, n.name) for n in s.nics],
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines(), st.data())
def test_random_matrices_round_trip_in_every_layout(snap: Snapshot, data: st.DataObject) -> None:
    text = layouts(render_matrix(snap), data.draw)
    got = import_text(text, "gen.txt")
    want = facts(snap)
    if "NIC Legend" not in text:
        want = (want[0], want[1], [(n.index, f"NIC{n.index}") for n in snap.nics])
    assert facts(got) == want


@settings(max_examples=300, deadline=None)
@given(machines(), st.data())
def test_mangled_pastes_import_or_fail_cleanly(snap: Snapshot, data: st.DataObject) -> None:
    text = render_matrix(snap)
    op = data.draw(st.sampled_from(["cut", "delete", "insert", "swap"]))
    pos = data.draw(st.integers(0, max(0, len(text) - 1)))
    if op == "cut":
        text = text[:pos]
    elif op == "delete":
        text = text[:pos] + text[pos + data.draw(st.integers(1, 20)) :]
    elif op == "insert":
        text = text[:pos] + data.draw(st.text(max_size=10)) + text[pos:]
    else:
        lines = text.split("\n")
        i, j = data.draw(st.integers(0, len(lines) - 1)), data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
        text = "\n".join(lines)
    try:
        s = import_text(text, "mangled.txt")
    except TopomapError as err:
        assert "\n" not in str(err) and str(err).startswith("mangled.txt")
        return
    assert all(p.path is None or p.path in PCIE or p.path.startswith("NV") for p in s.pairs)


XML_FILES = ["nccl-xml/aws-p4d-24xlarge.xml", "nccl-xml/ibm-cloud-gx3d-h100-8gpu-vsi.xml", "hwloc/nvidia-dgx2h.xml"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(XML_FILES), st.data())
def test_mangled_xml_imports_or_fails_cleanly(name: str, data: st.DataObject) -> None:
    from tests.conftest import REAL

    text = (REAL / name).read_text()
    pos = data.draw(st.integers(0, len(text) - 1))
    op = data.draw(st.sampled_from(["cut", "delete", "insert", "attr"]))
    if op == "cut":
        text = text[:pos]
    elif op == "delete":
        text = text[:pos] + text[pos + data.draw(st.integers(1, 200)) :]
    elif op == "insert":
        text = text[:pos] + data.draw(st.sampled_from(['"', "<", ">", "&", "x", "0x", ' busid="zz"'])) + text[pos:]
    else:
        text = (
            text.replace('busid="', 'busid="z', 1)
            if data.draw(st.booleans())
            else text.replace('class="0x03', 'class="0xZZ')
        )
    try:
        import_text(text, "mangled.xml")
    except TopomapError as err:
        assert "\n" not in str(err) and str(err).startswith("mangled.xml")

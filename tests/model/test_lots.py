"""Declared lots (issue 31): a lot as a catalogue describes it reads as a snapshot that every command takes;
each fact it gives is declared wherever it is used, what it leaves out is unknown; bad input is one line
naming the file, line and field. Samples: samples/lots/ (the three accept cases)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from topomap.cli import app
from topomap.files.kind import file_kind
from topomap.graph import FABRIC, build
from topomap.graph.evidence import nearest_nic, nvlink
from topomap.importers import load_any
from topomap.model.facts import gpu_memory
from topomap.model.filled_facts import nic_speed
from topomap.model.lots import LotError, read_lot
from topomap.model.nvlink_rate import nvlink_bundle_bandwidth
from topomap.model.origins import fact_origin
from topomap.model.snapshot import Snapshot, hosts_of
from topomap.model.source_facts import Fact, source_facts

ROOT = Path(__file__).resolve().parents[2]
LOTS = ROOT / "samples" / "lots"
NVSWITCH = LOTS / "one-host-nvswitch.yaml"
TWO_HOSTS = LOTS / "two-host-ib.yaml"
B200 = LOTS / "b200-two-180gb.yaml"


def _run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"})
    return res.exit_code, res.stdout, res.stderr


def test_a_declared_lot_is_a_file_kind_of_its_own() -> None:
    assert file_kind(NVSWITCH) == "lot"
    assert file_kind(ROOT / "samples" / "flows" / "two-host-lot.yaml") == "flow"  # `lot-1:` is no top-level `lot:`


def test_one_host_nvswitch_lot_every_pair_nv18_through_the_declared_switch() -> None:
    snap = load_any(NVSWITCH)
    assert snap.source.kind == "declared" and snap.source.formats == ["declared"]
    assert [g.name for g in snap.gpus] == ["NVIDIA H100 80GB HBM3"] * 8  # "H100 SXM 80GB" in the parts table
    topo = build(snap)
    assert topo.graph.nodes[FABRIC]["label"] == "NVSwitch fabric (declared)"
    nv = nvlink(topo, "gpu0", "gpu7")
    assert nv.usable.yes and nv.links == 18 and nv.via == "nvswitch"
    assert nv.bandwidth.gbps == 450 and nv.bandwidth.source == "declared"  # the parts table's rate, declared
    assert "declared" in nv.bandwidth.text()
    mem = gpu_memory(snap.gpus[0], snap)
    assert mem.total_bytes == 80 * 10**9 and mem.source == "declared: 80 GB"


def test_what_a_declaration_leaves_out_is_unknown_never_a_default() -> None:
    snap = load_any(NVSWITCH)
    facts = source_facts(snap)
    assert facts.knows(Fact.NVLINK) and facts.knows(Fact.PCIE_LINK) and facts.knows(Fact.GPU_MEMORY)
    for fact in (Fact.NICS, Fact.NUMA, Fact.PATH, Fact.P2P, Fact.FABRIC, Fact.DRIVER, Fact.NVLINK_LINKS):
        assert not facts.knows(fact), fact
    assert snap.nics == [] and all(g.numa_node is None for g in snap.gpus)
    b200 = load_any(B200)
    assert not source_facts(b200).knows(Fact.NVLINK)  # the catalogue line says nothing of links
    assert nvlink(build(b200), "gpu0", "gpu1").usable.value == "unknown"


def test_gpu_links_none_is_a_fact_not_unknown() -> None:
    snap = read_lot("lot: x\ngpus: {model: L40S, count: 2}\ngpu_links: none\n", "none.yaml")
    nv = nvlink(build(snap), "gpu0", "gpu1")
    assert nv.usable.no and "no NVLink" in nv.usable.why()


def test_nv_k_every_pair_direct_links() -> None:
    snap = read_lot("lot: x\ngpus: {model: RTX 3090, count: 2}\ngpu_links: NV4\n", "nv4.yaml")
    nv = nvlink(build(snap), "gpu0", "gpu1")
    assert nv.usable.yes and nv.links == 4 and nv.via == "nvlink" and nv.bandwidth.source == "declared"


def test_two_host_lot_is_a_cluster_of_lot_1_and_lot_2_with_declared_nics() -> None:
    snap = load_any(TWO_HOSTS)
    assert snap.source.kind == "merge" and [h.host.hostname for h in snap.members] == ["lot-1", "lot-2"]
    host = hosts_of(snap)[0]
    assert len(host.nics) == 8 and {n.kind for n in host.nics} == {"infiniband"}
    speed = nic_speed(host.nics[0], host)
    assert speed.gbit_s == 400 and speed.text() == "400 Gb/s (declared)" and speed.bandwidth().source == "declared"
    choice = nearest_nic(build(host), "gpu0")
    assert choice.gdr.yes and choice.path is None  # GPUDirect declared; where the NICs sit is not
    assert snap.lot is not None and snap.lot.price is not None and snap.lot.price.per == "host-hour"


def test_map_over_the_two_host_lot_says_declared_on_the_network_figure() -> None:
    code, out, _ = _run("map", "--json", str(ROOT / "samples" / "flows" / "two-host-lot.yaml"))
    assert code == 0
    net = next(a for a in json.loads(out)["arrows"] if a["medium"] == "network")
    assert net["bandwidth_gbps"] == 50 and net["bandwidth_source"] == "declared" and net["via"] == "infiniband"


def test_b200_task_larger_than_one_card_does_not_fit_however_much_the_lot_holds() -> None:
    code, out, _ = _run("plan", "--json", str(ROOT / "samples" / "flows" / "big-task-b200.yaml"))
    assert code == 0
    doc = json.loads(out)
    one = next(a for a in doc["arrangements"] if a["cards"] == 1)
    assert one["memory_fit"]["verdict"] == "does not fit"
    assert "cards do not pool memory" in one["memory_fit"]["reason"]
    assert one["memory_fit"]["card_bytes_source"] == "declared: 180 GB"
    split = next(a for a in doc["arrangements"] if a["cards"] == 2 and a["arrangement"] == "coordinated")
    assert split["memory_fit"]["verdict"] == "fits"


def test_plan_costs_card_minutes_times_the_price_and_the_period_that_covers_the_total() -> None:
    flow = ROOT / "samples" / "flows" / "big-task-b200.yaml"
    _, out, _ = _run("plan", "--json", str(flow))
    cost = json.loads(out)["cost"]
    assert cost["price"] == {"amount": 5.99, "currency": "USD", "per": "gpu-hour"}
    one = cost["arrangements"][0]
    assert one["amount"] == pytest.approx(122 * 5.99 / 60)  # 122 card-minutes at 5.99 USD per GPU-hour
    assert one["rental_period_s"] == 86400 and one["rental_period_amount"] == pytest.approx(24 * 5.99 * 2)
    assert cost["cheapest"]["cards"] == 2 and cost["cheapest"]["fits"]  # one card does not fit


def test_diff_of_two_priced_lots_for_a_flow_says_which_does_the_work_for_less(tmp_path: Path) -> None:
    dear = tmp_path / "dear.yaml"
    dear.write_text(NVSWITCH.read_text().replace("2.49 USD", "4.98 USD"))
    flow = ROOT / "samples" / "flows" / "llm-batch-h100.yaml"
    _, out, _ = _run("diff", "--json", str(NVSWITCH), str(dear), "--flow", str(flow))
    said = [x for x in json.loads(out)["plan"] if x.startswith("cost:")]
    assert said and said[0].startswith("cost: one-host-nvswitch does the work for less")
    euro = tmp_path / "euro.yaml"
    euro.write_text(NVSWITCH.read_text().replace("2.49 USD", "2.49 EUR"))
    _, out, _ = _run("diff", "--json", str(NVSWITCH), str(euro), "--flow", str(flow))
    assert any("never converts currencies" in x for x in json.loads(out)["plan"])


def test_every_command_that_takes_a_snapshot_takes_a_declared_lot(tmp_path: Path) -> None:
    lot = str(NVSWITCH)
    flow = str(ROOT / "samples" / "flows" / "tensor-parallel.yaml")
    reqs = str(ROOT / "samples" / "requirements" / "tensor-parallel.yaml")
    for args in (
        ("show", lot),
        ("matrix", lot),
        ("render", lot, "-o", str(tmp_path / "lot.dot")),
        ("place", lot, "--gpus", "2"),
        ("nccl", lot),
        ("map", flow, f"lot={lot}"),
        ("plan", str(ROOT / "samples" / "flows" / "llm-batch-h100.yaml"), f"lot={lot}"),
        ("report", flow, f"lot={lot}", "-o", str(tmp_path / "r.html")),
        ("diff", lot, str(B200)),
    ):
        code, out, err = _run(*args)
        assert code in (0, 1), (args, err)
        assert "declared" in out or "declared" in (tmp_path / "lot.dot").read_text(), args
    code, out, _ = _run("check", reqs, flow, f"lot={lot}", "--json")
    rules = {r["rule"]: r for r in json.loads(out)["rules"]}
    # NVLink declared: the GPU pairs pass on it; GPUDirect NICs not declared: unknown
    assert code == 3 and {k: r["status"] for k, r in rules.items()} == {
        "gpus": "pass", "gpu_links": "pass", "gdr_nic": "unknown", "arrow_bandwidth": "pass"
    }  # fmt: skip
    assert rules["gpu_links"]["evidence"][1] == "gpu0–gpu1: NV18 (declared)"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("gpus: {model: X100, count: 8}", 2, "unknown GPU model 'X100' in gpus.model (did you mean MI100?)"),
        ("gpus: {model: H100 SXM 80GB, count: 0}", 2, "gpus.count 0: a count is a whole number"),
        ("gpus: {model: H100 SXM 80GB, count: 8}\nnics: {count: 8, rate: 400}", 3, "nics.rate 400: a rate without"),
        ("type: aws/p9.48xlarge", 2, "type 'aws/p9.48xlarge': not in the catalogue"),
        ("gpus: {model: H100 SXM 80GB, count: 8}\ngpu_link: nvswitch", 3, "unknown field `gpu_link`"),
        ("gpus: {model: H100 80GB, count: 8}", 2, "names more than one GPU model"),
        ("gpus: {model: H100 SXM 80GB, count: 8}\ngpu_links: NV20", 3, "more NVLinks than the NVIDIA H100"),
        ("gpus: {model: H100 SXM 80GB, count: 8}\nprice: 2.49", 3, "price 2.49: without its currency or what it"),
        (
            "gpus: {model: H100 SXM 80GB, count: 8}\nperiods: [1 month]",
            3,
            "periods item 1 '1 month': not a rental period",
        ),
        ("gpus: {model: H100 SXM 80GB, count: 8}\nnics: {count: 8, rate: 50 GB/s}", 3, "not a line rate in bits"),
    ],
)
def test_bad_input_is_one_line_naming_file_line_and_field(tmp_path: Path, text: str, line: int, message: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"lot: bad\n{text}\n")
    with pytest.raises(LotError) as err:
        read_lot(bad.read_text(), str(bad))
    assert str(err.value).startswith(f"{bad}:{line}: ") and message in str(err.value)
    code, out, stderr = _run("show", str(bad))
    assert code == 2 and out == "" and stderr.count("\n") == 1 and "Traceback" not in stderr


def test_unknown_key_hint_and_unknown_type_hint() -> None:
    with pytest.raises(LotError) as err:
        read_lot("lot: x\ngpus: {modle: H100, count: 8}\n", "t.yaml")
    assert err.value.hint == "did you mean `model`?"
    with pytest.raises(LotError) as err:
        read_lot("lot: x\ntype: aws/p4de\n", "t.yaml")
    assert err.value.hint is not None and "aws/p4de.24xlarge" in err.value.hint


def test_type_starts_from_the_catalogue_and_the_lots_own_keys_override_it() -> None:
    snap = read_lot("lot: mine\ntype: aws/p4d.24xlarge\nnics: {count: 4, rate: 200 Gb/s}\n", "t.yaml")
    assert fact_origin(snap, "pairs.nvlink") is not None and fact_origin(snap, "pairs.nvlink").origin == "catalogue"
    rate = fact_origin(snap, "nics.speed_gbit_s")
    assert rate is not None and rate.origin == "declared" and snap.nics[0].speed_gbit_s == 200
    gpus = fact_origin(snap, "gpus.name")
    assert gpus is not None and gpus.origin == "catalogue" and gpus.url and "p4d-instances-deep-dive" in gpus.url


def test_schema_lot_is_shipped_and_json_of_show_keeps_the_origins() -> None:
    code, out, _ = _run("schema", "lot")
    assert code == 0 and json.loads(out)["title"] == "topomap declared lot"
    code, out, _ = _run("show", "--json", str(NVSWITCH))
    doc = json.loads(out)
    assert doc["source"]["kind"] == "declared"
    assert {f["field"]: f["origin"] for f in doc["source"]["filled"]}["pairs.nvlink"] == "declared"
    assert doc["lot"]["price"]["per"] == "gpu-hour" and doc["lot"]["periods_s"] == [259200.0, 604800.0, 2592000.0]


def test_nvlink_bundle_of_a_catalogue_filled_paste_says_catalogue_and_its_entry() -> None:
    from topomap.model.lots import with_lot_type

    xml = ROOT / "tests/data/real-topologies/nccl-xml/aws-p4d-24xlarge.xml"
    snap = with_lot_type(load_any(xml), "aws/p4d.24xlarge")
    bw = nvlink_bundle_bandwidth(snap.gpus[0], 12, snap)
    assert bw.source == "catalogue" and bw.text() == "300 GB/s catalogue (aws/p4d.24xlarge)"


def _as_probed(snap: Snapshot) -> Snapshot:
    """A declared host as if a probe had read every one of its facts (the shortfalls set per test)."""
    src = msgspec.structs.replace(snap.source, kind="probe", formats=["probe"], filled=[], unknown_fields=[])
    return msgspec.structs.replace(snap, source=src, lot=None)


PROMISE = (
    "lot: p\ngpus: {model: H100 SXM 80GB, count: 8, memory: 80 GB}\ngpu_links: nvswitch\n"
    "nics: {count: 8, rate: 400 Gb/s, fabric: infiniband}\npcie: {gen: 5, width: 16}\n"
)


def test_promise_kept_is_as_promised_and_each_shortfall_is_short() -> None:
    from topomap.diff.promise import check_promise

    promised = read_lot(PROMISE, "p.yaml")
    kept = _as_probed(promised)
    assert check_promise(promised, kept, ("p.yaml", "probe.json")).verdict == "as promised"
    rep = msgspec.structs.replace
    fewer = rep(kept, gpus=kept.gpus[:7], pairs=[p for p in kept.pairs if "gpu7" not in (p.a, p.b)])
    other = rep(kept, gpus=[rep(g, name="NVIDIA H100 PCIe") for g in kept.gpus])
    slower = rep(kept, nics=[rep(n, speed_gbit_s=200.0) for n in kept.nics])
    narrower = rep(kept, gpus=[rep(g, pcie=rep(g.pcie, width_current=8)) for g in kept.gpus])
    nv12 = rep(kept, pairs=[rep(p, path="NV12", nvlinks=12) for p in kept.pairs], nvswitches=[])
    for received, fact in ((fewer, "GPUs"), (other, "GPU model"), (slower, "NIC rate"), (narrower, "PCIe link"),
                           (nv12, "NVLink")):  # fmt: skip
        result = check_promise(promised, received, ("p.yaml", "probe.json"))
        assert [x.fact for x in result.lines if x.status == "short"] == [fact]
        assert result.verdict == "short of the promise" and result.exit_status == 1


def test_promise_against_a_paste_without_nvlink_says_so_not_short() -> None:
    code, out, _ = _run("diff", str(NVSWITCH), str(ROOT / "samples/snapshots/rtx4090-8gpu-all-sys.json"))
    assert code == 1 and "SHORT         NVLink" in out and "no usable NVLink" in out
    p4d = ROOT / "tests/data/real-topologies/nccl-xml/aws-p4d-24xlarge.xml"
    code, out, _ = _run("diff", "--json", str(NVSWITCH), str(p4d))
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "short of the promise"
    assert [x["fact"] for x in doc["facts"] if x["status"] == "short"] == ["PCIe link"]  # Gen3 links, Gen5 promised
    model = next(x for x in doc["facts"] if x["fact"] == "GPU model")
    assert model["status"] == "cannot check"  # the static file names no GPU model: not "another model"
    nvl = next(x for x in doc["facts"] if x["fact"] == "NVLink")
    assert nvl["status"] == "cannot check" and nvl["settle"].startswith("`nvidia-smi topo -m`")

"""The expected bus bandwidth against real nccl-tests outputs (tests/data/real-nccl-tests; each file's lot as
its author describes it in lots.json): the issue-32 acceptance, and the table of that folder's README kept
true (issue 32)."""

from __future__ import annotations

from tests.nccl_lots import DATA, accuracy, table_lines


def test_the_readme_table_is_what_the_model_gives() -> None:
    readme = (DATA / "README.md").read_text()
    for line in table_lines():
        assert line in readme, f"tests/data/real-nccl-tests/README.md lacks (regenerate it): {line}"


def test_healthy_runs_are_within_20_percent_on_at_least_85_percent() -> None:
    rows = [r for r in accuracy() if r["status"] == "healthy" and r["expected"] is not None]
    within = [r for r in rows if 0.8 <= float(r["ratio"]) <= 1.2]
    assert len(rows) >= 15
    assert len(within) / len(rows) >= 0.85, [r["file"] for r in rows if r not in within]
    held = [r for r in rows if r["set"] == "held out"]
    assert held and all(0.8 <= float(r["ratio"]) <= 1.2 for r in held)  # what no constant was fitted to


def test_every_underperforming_run_is_far_below_and_no_healthy_one_is() -> None:
    rows = accuracy()
    under = [r for r in rows if r["status"] == "underperforming"]
    healthy = [r for r in rows if r["status"] == "healthy"]
    assert under and all(r["verdict"] == "far-below" for r in under)
    assert sum(r["verdict"] == "far-below" for r in healthy) <= len(healthy) // 25


def test_a_missing_fact_is_null_and_names_what_settles_it() -> None:
    unknown = [r for r in accuracy() if r["expected"] is None]
    assert unknown
    for r in unknown:
        assert r["verdict"] == "unknown" and any("ibstat" in s or "nvidia-smi" in s for s in r["settle"]), r


def test_each_declared_lot_says_what_its_description_says() -> None:
    """lots/*.yaml (what accuracy() reads) and lots.json's descriptions (what the paste builder reads) agree."""
    from tests.nccl_lots import declared, descriptions
    from topomap.model.lots import read_lot
    from topomap.model.snapshot import hosts_of

    for name, d in descriptions().items():
        lot, path = d["lot"], declared(name)
        snap = read_lot(path.read_text(), str(path))
        hosts = hosts_of(snap)
        one = hosts[0]
        assert len(hosts) == lot["hosts"], name
        assert [g.name for g in one.gpus] == [lot["gpu"]] * lot["gpus"], name
        nvlinked = any(p.nvlinks for p in one.pairs)
        assert nvlinked == (lot["board"] in ("nvswitch", "nvlink-pair") and lot["gpus"] > 1), name
        assert bool(one.nvswitches) == (lot["board"] == "nvswitch"), name
        nics = lot.get("nics")
        assert len(one.nics) == (nics["count"] if nics else 0), name
        if nics:
            assert {n.speed_gbit_s for n in one.nics} == {float(nics["gbps"])}, name
        if "pcie" in lot:
            assert one.gpus[0].pcie is not None and one.gpus[0].pcie.gen_max == lot["pcie"][0], name
        assert one.software.cuda_driver_version == lot.get("cuda"), name
        assert (one.gpus[0].fabric is not None) == bool(lot.get("clique")), name

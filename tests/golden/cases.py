"""Every command over every sample, flow and requirements file: the golden comparison kept for the
package move (issue 18). ``TOPOMAP_GOLDEN=1 python -m pytest tests/cli/test_golden.py`` rewrites the
goldens; review ``git diff tests/data/golden`` before committing them.

Each case states its exit status (issue 33 item 6), so a regeneration cannot turn a passing command
into a failing one unseen: a case is ``(name, argv)`` when the command exits 0, ``(name, argv, exit)``
when it does not; a family of cases whose status depends on the sample states it in :data:`EXITS`
by name. :func:`cases` gives each as a :class:`Case`, still the ``(name, argv)`` pair it always was.
``TOPOMAP_GOLDEN=1`` refuses to write a golden whose command exits otherwise than its case states;
``TOPOMAP_GOLDEN=2`` writes it anyway (and the plain run then fails until the case says so).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
REAL = ROOT / "tests" / "data" / "real-topologies"


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


class Case(tuple[str, list[str]]):
    """One command whose output is pinned in ``tests/data/golden/NAME.txt``: ``(name, argv)`` as a
    pair (so ``for name, argv in cases()`` reads it), and ``exit``, the status the command must exit
    with. ``OUT.ext`` in argv is a file it writes, compared too."""

    exit: int

    def __new__(cls, name: str, argv: list[str], exit: int = 0) -> Case:
        case = super().__new__(cls, (name, argv))
        case.exit = exit
        return case

    @property
    def name(self) -> str:
        return self[0]

    @property
    def argv(self) -> list[str]:
        return self[1]

    def __repr__(self) -> str:
        return f"Case({self.name!r}, {self.argv!r}, exit={self.exit})"


#: The exit status of the cases that do not exit 0 and do not state it in the case itself (families
#: whose status depends on the sample), by case name. A case added here or in :func:`cases` with the
#: wrong status fails, and so does an entry that names no case.
EXITS: dict[str, int] = {
    # AMD (issue 35): the vendor-neutral tensor-parallel rules (gpu-link, 80 GB) fail (1) where GPU pairs are on
    # PCIe or memory is short, UNKNOWN (3) where a sample does not record memory; the NVLink rule fails on the
    # MI300X (XGMI is not NVLink); diffs against the MI300X lot differ (1) or cannot confirm (3)
    "check-json-tensor-parallel-gpu-link-on-aws-p4d-24xlarge": 3,
    "check-json-tensor-parallel-gpu-link-on-azure-ndv4": 3,
    "check-json-tensor-parallel-gpu-link-on-dgx1-v100": 1,
    "check-json-tensor-parallel-gpu-link-on-dgx2h-16gpu": 1,
    "check-json-tensor-parallel-gpu-link-on-gcp-a4-b200-8gpu": 3,
    "check-json-tensor-parallel-gpu-link-on-h20-8gpu-vm": 3,
    "check-json-tensor-parallel-gpu-link-on-hgx-a100-8gpu-8nic": 3,
    "check-json-tensor-parallel-gpu-link-on-hgx-h200-8gpu-10nic": 3,
    "check-json-tensor-parallel-gpu-link-on-rtx4090-8gpu-all-sys": 1,
    "check-json-tensor-parallel-gpu-link-on-rtx5090-pair-p2p-gns": 1,
    "check-json-tensor-parallel-on-mi300x-8gpu-8nic": 1,
    "check-tensor-parallel-gpu-link-on-aws-p4d-24xlarge": 3,
    "check-tensor-parallel-gpu-link-on-azure-ndv4": 3,
    "check-tensor-parallel-gpu-link-on-dgx1-v100": 1,
    "check-tensor-parallel-gpu-link-on-dgx2h-16gpu": 1,
    "check-tensor-parallel-gpu-link-on-gcp-a4-b200-8gpu": 3,
    "check-tensor-parallel-gpu-link-on-h20-8gpu-vm": 3,
    "check-tensor-parallel-gpu-link-on-hgx-a100-8gpu-8nic": 3,
    "check-tensor-parallel-gpu-link-on-hgx-h200-8gpu-10nic": 3,
    "check-tensor-parallel-gpu-link-on-rtx4090-8gpu-all-sys": 1,
    "check-tensor-parallel-gpu-link-on-rtx5090-pair-p2p-gns": 1,
    "check-tensor-parallel-on-mi300x-8gpu-8nic": 1,
    "diff-flow-ibm-gx3d-h100-8gpu-vs-mi300x-8gpu-8nic": 3,
    "diff-flow-mi300x-8gpu-8nic-vs-rtx4090-8gpu-all-sys": 3,
    "diff-ibm-gx3d-h100-8gpu-vs-mi300x-8gpu-8nic": 1,
    "diff-json-ibm-gx3d-h100-8gpu-vs-mi300x-8gpu-8nic": 1,
    "diff-json-mi300x-8gpu-8nic-vs-rtx4090-8gpu-all-sys": 1,
    "diff-mi300x-8gpu-8nic-vs-rtx4090-8gpu-all-sys": 1,
    "diff-flow-mi300x-vs-h100-tensor-parallel": 3,
    # declared lots (issue 31): a rule the lot leaves open is UNKNOWN (3);
    # promised against received: 1 short of the promise, 3 cannot tell
    "lot-check-b200-two-180gb": 1,
    "lot-check-one-host-nvswitch": 3,
    "lot-diff-cost": 3,
    "lot-promise-json-gcp": 3,
    "lot-promise-nvswitch-ibm": 3,
    "lot-promise-two-hosts-h200": 3,
    # attach: figures of a 2-GPU H100 box attached to the first sample (a p4d) are refused
    "attach-nvbandwidth-v0.8-2gpu-h100.json": 2,
    "attach-nvbandwidth-v0.8-2gpu-h100.txt": 2,
    # check: 1 a rule fails, 3 a rule the snapshot cannot answer (UNKNOWN)
    "check-doc-conversion-on-dgx1-v100": 3,
    "check-json-doc-conversion-on-dgx1-v100": 3,
    "check-json-tensor-parallel-on-aws-p4d-24xlarge": 3,
    "check-json-tensor-parallel-on-azure-ndv4": 3,
    "check-json-tensor-parallel-on-dgx1-v100": 1,
    "check-json-tensor-parallel-on-dgx2h-16gpu": 1,
    "check-json-tensor-parallel-on-h20-8gpu-vm": 3,
    "check-json-tensor-parallel-on-rtx4090-8gpu-all-sys": 1,
    "check-json-tensor-parallel-on-rtx5090-pair-p2p-gns": 1,
    "check-tensor-parallel-on-aws-p4d-24xlarge": 3,
    "check-tensor-parallel-on-azure-ndv4": 3,
    "check-tensor-parallel-on-dgx1-v100": 1,
    "check-tensor-parallel-on-dgx2h-16gpu": 1,
    "check-tensor-parallel-on-h20-8gpu-vm": 3,
    "check-tensor-parallel-on-rtx4090-8gpu-all-sys": 1,
    "check-tensor-parallel-on-rtx5090-pair-p2p-gns": 1,
    # diff: 1 the lots differ, 3 cannot confirm (a side does not record what the comparison needs)
    "diff-aws-p4d-24xlarge-vs-azure-ndv4": 3,
    "diff-azure-ndv4-vs-dgx1-v100": 1,
    "diff-dgx1-v100-vs-dgx2h-16gpu": 1,
    "diff-dgx2h-16gpu-vs-gcp-a4-b200-8gpu": 1,
    "diff-flow-aws-p4d-24xlarge-vs-azure-ndv4": 3,
    "diff-flow-azure-ndv4-vs-dgx1-v100": 3,
    "diff-flow-dgx1-v100-vs-dgx2h-16gpu": 1,
    "diff-flow-dgx2h-16gpu-vs-gcp-a4-b200-8gpu": 1,
    "diff-flow-gcp-a4-b200-8gpu-vs-h20-8gpu-vm": 3,
    "diff-flow-h20-8gpu-vm-vs-hgx-a100-8gpu-8nic": 3,
    "diff-flow-hgx-a100-8gpu-8nic-vs-hgx-h200-8gpu-10nic": 3,
    "diff-flow-hgx-h200-8gpu-10nic-vs-ibm-gx3d-h100-8gpu": 3,
    "diff-flow-rtx4090-8gpu-all-sys-vs-rtx5090-pair-p2p-gns": 1,
    "diff-flow-rtx5090-pair-p2p-gns-vs-aws-p4d-24xlarge": 1,
    "diff-gcp-a4-b200-8gpu-vs-h20-8gpu-vm": 3,
    "diff-h20-8gpu-vm-vs-hgx-a100-8gpu-8nic": 3,
    "diff-hgx-a100-8gpu-8nic-vs-hgx-h200-8gpu-10nic": 3,
    "diff-hgx-h200-8gpu-10nic-vs-ibm-gx3d-h100-8gpu": 1,
    "diff-json-aws-p4d-24xlarge-vs-azure-ndv4": 3,
    "diff-json-azure-ndv4-vs-dgx1-v100": 1,
    "diff-json-dgx1-v100-vs-dgx2h-16gpu": 1,
    "diff-json-dgx2h-16gpu-vs-gcp-a4-b200-8gpu": 1,
    "diff-json-gcp-a4-b200-8gpu-vs-h20-8gpu-vm": 3,
    "diff-json-h20-8gpu-vm-vs-hgx-a100-8gpu-8nic": 3,
    "diff-json-hgx-a100-8gpu-8nic-vs-hgx-h200-8gpu-10nic": 3,
    "diff-json-hgx-h200-8gpu-10nic-vs-ibm-gx3d-h100-8gpu": 1,
    "diff-json-rtx4090-8gpu-all-sys-vs-rtx5090-pair-p2p-gns": 1,
    "diff-json-rtx5090-pair-p2p-gns-vs-aws-p4d-24xlarge": 3,
    "diff-rtx4090-8gpu-all-sys-vs-rtx5090-pair-p2p-gns": 1,
    "diff-rtx5090-pair-p2p-gns-vs-aws-p4d-24xlarge": 3,
    # plan: the sample tensor-parallel flow's work has no units (its diff --flow goldens pin a flow without a plan)
    "plan-cards-tensor-parallel": 2,
    "plan-json-tensor-parallel": 2,
    "plan-tensor-parallel": 2,
}


def cases() -> list[Case]:
    """Every command the goldens cover, each with the exit status it must give."""
    out: list[tuple[str, list[str]] | tuple[str, list[str], int] | Case] = []
    snaps = sorted((SAMPLES / "snapshots").glob("*.json"))
    for s in snaps:
        n = s.stem
        out += [
            (f"show-{n}", ["show", _rel(s)]),
            (f"show-json-{n}", ["show", "--json", _rel(s)]),
            (f"matrix-{n}", ["matrix", _rel(s)]),
            (f"matrix-json-{n}", ["matrix", "--json", _rel(s)]),
            (f"render-{n}", ["render", _rel(s), "-o", "OUT.dot"]),
            (f"place-{n}", ["place", _rel(s), "--gpus", "2", "--nics"]),
            (f"nccl-json-{n}", ["nccl", "--json", _rel(s)]),
        ]
    for r in sorted(REAL.rglob("*")):
        if r.is_file() and r.suffix in (".txt", ".xml") and "bandwidth" not in r.parts:
            out.append((f"import-{r.stem}", ["import", _rel(r), "-o", "-"]))
            out.append((f"matrix-raw-{r.stem}", ["matrix", _rel(r)]))
            out.append((f"show-raw-{r.stem}", ["show", _rel(r)]))
    flows = sorted((SAMPLES / "flows").glob("*.yaml"))
    for f in flows:
        n = f.stem
        out += [
            (f"map-{n}", ["map", _rel(f)]),
            (f"map-json-{n}", ["map", "--json", _rel(f)]),
            (f"render-flow-{n}", ["render", "--flow", _rel(f), "-o", "OUT.dot"]),
            (f"plan-{n}", ["plan", _rel(f)]),
            (f"plan-json-{n}", ["plan", "--json", _rel(f)]),
            (f"plan-cards-{n}", ["plan", _rel(f), "--cards", "1,2"]),
            (f"report-{n}", ["report", _rel(f), "-o", "OUT.html"]),
        ]
        for s in snaps if "hosts:\n  lot:" in f.read_text() else []:
            out.append((f"map-{n}-on-{s.stem}", ["map", "--json", _rel(f), "--probe", f"lot={_rel(s)}"]))
    for q in sorted((SAMPLES / "requirements").glob("*.yaml")):
        flow = SAMPLES / "flows" / q.name
        for s in snaps:
            base = ["check", _rel(q), "--probe", f"lot={_rel(s)}"]
            if flow.exists():
                base += ["--flow", _rel(flow)]
            out.append((f"check-{q.stem}-on-{s.stem}", base))
            out.append((f"check-json-{q.stem}-on-{s.stem}", [*base, "--json"]))
    for i, a in enumerate(snaps):
        b = snaps[(i + 1) % len(snaps)]
        out.append((f"diff-{a.stem}-vs-{b.stem}", ["diff", _rel(a), _rel(b)]))
        out.append((f"diff-json-{a.stem}-vs-{b.stem}", ["diff", "--json", _rel(a), _rel(b)]))
        out.append(
            (
                f"diff-flow-{a.stem}-vs-{b.stem}",
                ["diff", _rel(a), _rel(b), "--flow", _rel(SAMPLES / "flows" / "tensor-parallel.yaml")],
            )
        )
    # AMD (issue 35): an MI300X lot against an H100 lot for the tensor-parallel flow, the MI300X flow planned on
    # the H100 lot (192 GB a card decides what fits), RCCL's logs predicted by RCCL's rules
    mi300x, h100 = SAMPLES / "snapshots" / "mi300x-8gpu-8nic.json", SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"
    tp = SAMPLES / "flows" / "tensor-parallel.yaml"
    out.append(("diff-flow-mi300x-vs-h100-tensor-parallel", ["diff", _rel(mi300x), _rel(h100), "--flow", _rel(tp)]))
    mi_flow = SAMPLES / "flows" / "llm-batch-mi300x.yaml"
    out.append(("plan-llm-batch-mi300x-on-h100", ["plan", _rel(mi_flow), "--probe", f"lot={_rel(h100)}"]))
    for log in sorted((ROOT / "tests" / "data" / "real-nccl-logs").glob("*rccl*.log")):
        out.append((f"nccl-log-{log.stem}", ["nccl", "--log", _rel(log)]))
    rec = sorted((SAMPLES / "records").glob("*.json"))
    for r in rec:
        out.append((f"show-record-{r.stem}", ["show", _rel(r)]))
    if len(rec) >= 2:
        out.append(("diff-records", ["diff", _rel(rec[0]), _rel(rec[1])]))
        out.append(("diff-records-json", ["diff", "--json", _rel(rec[0]), _rel(rec[1])]))
    out.append(("merge", ["merge", *[f"h{i}={_rel(s)}" for i, s in enumerate(snaps[:3])], "-o", "-"]))
    a100 = SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json"
    for bw in sorted((REAL / "bandwidth").glob("*.txt")):
        out.append((f"attach-{bw.stem}", ["attach", _rel(a100), _rel(bw), "-o", "OUT.json"]))
    for fx in sorted((ROOT / "tests" / "data" / "fixtures").glob("nvbandwidth*")):
        out.append((f"attach-{fx.name}", ["attach", _rel(snaps[0]), _rel(fx), "-o", "-"]))
    for kind in ("snapshot", "flow", "requirements", "run", "lot"):
        out.append((f"schema-{kind}", ["schema", kind]))
    return [_case(c) for c in out + lot_cases()]


def _case(c: tuple[str, list[str]] | tuple[str, list[str], int] | Case) -> Case:
    """A case with its exit status: its own, else :data:`EXITS`, else 0."""
    if isinstance(c, Case):
        return c
    if len(c) == 3:
        return Case(c[0], c[1], c[2])
    return Case(c[0], c[1], EXITS.get(c[0], 0))


def lot_cases() -> list[tuple[str, list[str]]]:
    """Declared lots and the catalogue (issue 31): the three sample lots through every command, the
    catalogue, --lot-type beside real pastes, promised against received, and costs."""
    out: list[tuple[str, list[str]]] = []
    lots = sorted((SAMPLES / "lots").glob("*.yaml"))
    one_host = [lot for lot in lots if "hosts:" not in lot.read_text()]
    tp_flow, tp_reqs = SAMPLES / "flows" / "tensor-parallel.yaml", SAMPLES / "requirements" / "tensor-parallel.yaml"
    for lot in lots:
        n = lot.stem
        out += [
            (f"lot-show-{n}", ["show", _rel(lot)]),
            (f"lot-show-json-{n}", ["show", "--json", _rel(lot)]),
            (f"lot-matrix-{n}", ["matrix", _rel(lot)]),
            (f"lot-render-{n}", ["render", _rel(lot), "-o", "OUT.dot"]),
            (f"lot-nccl-{n}", ["nccl", _rel(lot)]),
        ]
    for lot in one_host:
        n = lot.stem
        out += [
            (f"lot-place-{n}", ["place", _rel(lot), "--gpus", "2"]),
            (f"lot-check-{n}", ["check", _rel(tp_reqs), "--probe", f"lot={_rel(lot)}", "--flow", _rel(tp_flow)]),
            (f"lot-map-{n}", ["map", _rel(tp_flow), f"lot={_rel(lot)}"]),
        ]
    nvswitch = SAMPLES / "lots" / "one-host-nvswitch.yaml"
    llm = SAMPLES / "flows" / "llm-batch-h100.yaml"
    out += [
        ("lot-plan-cost", ["plan", _rel(llm), f"lot={_rel(nvswitch)}", "--cards", "2,4,8"]),
        ("lot-plan-cost-json", ["plan", "--json", _rel(llm), f"lot={_rel(nvswitch)}", "--cards", "2,8"]),
        ("lot-report", ["report", _rel(llm), f"lot={_rel(nvswitch)}", "-o", "OUT.html"]),
        (
            "lot-diff-cost",
            ["diff", _rel(nvswitch), _rel(SAMPLES / "lots" / "b200-two-180gb.yaml"), "--flow", _rel(llm)],
        ),
        ("lots", ["lots"]),
        ("lots-json", ["lots", "--json"]),
        ("lots-p4de", ["lots", "aws/p4de.24xlarge"]),
    ]
    p4d, p4de = REAL / "nccl-xml" / "aws-p4d-24xlarge.xml", REAL / "nccl-xml" / "aws-p4de-24xlarge.xml"
    log = ROOT / "tests" / "data" / "real-nccl-logs" / "a100-p4d-ipc-read-nccl527.log"
    gcp = REAL / "nvidia-smi" / "gcp-gke-a4-b200-8gpu-8nic.txt"
    out += [
        ("lot-type-show-p4de", ["show", _rel(p4de), "--lot-type", "aws/p4de.24xlarge"]),
        ("lot-type-check-p4de", ["check", _rel(tp_reqs), "--probe", f"lot={_rel(p4de)}", "--flow", _rel(tp_flow),
                                 "--lot-type", "aws/p4de.24xlarge"]),
        ("lot-type-nccl-p4d", ["nccl", "--log", _rel(log), _rel(p4d), "--lot-type", "aws/p4d.24xlarge"]),
        ("lot-type-map-p4d", ["map", _rel(tp_flow), f"lot={_rel(p4d)}", "--lot-type", "aws/p4d.24xlarge"]),
        ("lot-promise-nvswitch-ibm", ["diff", _rel(nvswitch), _rel(SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json")]),
        ("lot-promise-two-hosts-h200", ["diff", _rel(SAMPLES / "lots" / "two-host-ib.yaml"),
                                        _rel(SAMPLES / "snapshots" / "hgx-h200-8gpu-10nic.json")]),
        ("lot-promise-json-gcp", ["diff", "--json", _rel(SAMPLES / "lots" / "b200-two-180gb.yaml"), _rel(gcp)]),
    ]  # fmt: skip
    return out

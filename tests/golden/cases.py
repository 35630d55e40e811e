"""Every command over every sample, flow and requirements file: the golden comparison kept for the
package move (issue 18). ``TOPOMAP_GOLDEN=1 python -m pytest tests/test_golden.py`` rewrites the
goldens; review ``git diff tests/data/golden`` before committing them."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
REAL = ROOT / "tests" / "data" / "real-topologies"


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def cases() -> list[tuple[str, list[str]]]:
    """(name, argv) for every command the goldens cover; ``OUT`` in argv is a file to compare too."""
    out: list[tuple[str, list[str]]] = []
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
    return out + lot_cases()


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
        ("lot-diff-cost", ["diff", _rel(nvswitch), _rel(SAMPLES / "lots" / "b200-two-180gb.yaml"), "--flow",
                           _rel(llm)]),
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

"""check: a typo in a rule's step or host fails with the file, line and the closest name (it used to
change the verdict), and a GPU model pattern matches the way people write models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES
from topomap.check import Lot, RequirementsError, check, parse_requirements
from topomap.check.names import model_matches
from topomap.cli import app
from topomap.flow import read_flow
from topomap.flow.mapping import FlowMap
from topomap.graph import build
from topomap.importers import load_any

runner = CliRunner()
DOC = str(SAMPLES / "flows" / "doc-conversion.yaml")  # steps batch-a/b, convert-a/b, assemble, report
TP = str(SAMPLES / "flows" / "tensor-parallel.yaml")  # steps batch, shards, allreduce, weights
IBM = SAMPLES / "snapshots" / "ibm-gx3d-h100-8gpu.json"  # 8 × NVIDIA H100 80GB HBM3 (from the device id)


def run_check(tmp_path: Path, rules: str, *args: str) -> tuple[int, str, str]:
    f = tmp_path / "reqs.yaml"
    f.write_text("requirements:\n" + rules)
    r = runner.invoke(app, ["check", str(f), *args])
    return r.exit_code, r.stdout, r.stderr.replace(str(tmp_path) + "/", "")


@pytest.mark.parametrize(
    ("rules", "flow", "expected"),
    [
        (  # the typo used to be dropped: PASS on convert-b alone
            "  - gpus: {min_count: 2}\n  - same_numa: {steps: [convrt-a, convert-b]}\n",
            DOC,
            "topomap: error: reqs.yaml:3: unknown step 'convrt-a' in rule same_numa (hint: did you mean 'convert-a'? "
            "steps of flow document-conversion: batch-a, batch-b, convert-a, convert-b, assemble, report)\n",
        ),
        (  # used to FAIL "applies to no GPU pair"
            "  - gpu_links: {steps: [allreduse]}\n",
            TP,
            "topomap: error: reqs.yaml:2: unknown step 'allreduse' in rule gpu_links (hint: did you mean "
            "'allreduce'? steps of flow tensor-parallel: batch, shards, allreduce, weights)\n",
        ),
        (  # used to FAIL "applies to nothing"
            "  - arrow_bandwidth:\n      min_gbps: 10\n      from_step: allreduse\n",
            TP,
            "topomap: error: reqs.yaml:4: unknown step 'allreduse' in rule arrow_bandwidth (hint: did you mean "
            "'allreduce'? steps of flow tensor-parallel: batch, shards, allreduce, weights)\n",
        ),
        (  # used to say "rule `gpus` (line 2): no lot named 'lott'" with no file and no hint
            "  - gpus: {min_count: 1, host: lott}\n",
            DOC,
            "topomap: error: reqs.yaml:2: unknown host 'lott' in rule gpus (hint: did you mean 'lot'? hosts: lot)\n",
        ),
    ],
)
def test_a_misspelt_name_is_an_error_with_line_and_suggestion(
    tmp_path: Path, rules: str, flow: str, expected: str
) -> None:
    code, out, err = run_check(tmp_path, rules, "--flow", flow)
    assert (code, out, err) == (2, "", expected)


def test_the_json_error_names_the_line_too(tmp_path: Path) -> None:
    code, out, _ = run_check(tmp_path, "  - gpu_links: {steps: [allreduse]}\n", "--flow", TP, "--json")
    d = json.loads(out)
    assert code == 2 and d["error"].endswith("reqs.yaml:2: unknown step 'allreduse' in rule gpu_links")
    assert d["hint"].startswith("did you mean 'allreduce'?")


def test_step_of_a_list_is_found_on_its_own_line() -> None:
    text = "requirements:\n  - gpu_links:\n      steps:\n        - shards\n        - allreduse\n"
    reqs, _ = parse_requirements(text, "r.yaml")
    with pytest.raises(RequirementsError) as e:
        check(reqs, [], FlowMap(flow=read_flow(TP), arrows=[]))
    assert str(e.value) == "r.yaml:5: unknown step 'allreduse' in rule gpu_links"


def test_a_host_with_no_snapshot_cannot_be_checked_but_its_arrows_can(tmp_path: Path) -> None:
    code, _, err = run_check(tmp_path, "  - gpus: {min_count: 1, host: workstation}\n", "--flow", DOC)
    assert code == 2 and err == (
        "topomap: error: reqs.yaml:2: host 'workstation' of rule gpus has no snapshot, so nothing on it can be "
        "checked (hint: bind it: --probe workstation=SNAPSHOT)\n"
    )
    code, out, _ = run_check(
        tmp_path, "  - arrow_bandwidth: {min_gbps: 1, host: workstation}\n", "--flow", DOC, "--json"
    )
    rule = json.loads(out)["rules"][0]
    assert code == 3 and rule["lot"] == "workstation" and rule["summary"] == "0 of 3 arrows qualify"
    assert rule["description"] == "every arrow to or from workstation ≥ 1 GB/s"


def test_without_a_flow_a_lot_typo_lists_the_lots_and_steps_need_a_flow(tmp_path: Path) -> None:
    code, _, err = run_check(tmp_path, "  - gpus: {host: ibmm}\n", "--probe", f"ibm={IBM}")
    assert code == 2 and err == (
        "topomap: error: reqs.yaml:2: unknown host 'ibmm' in rule gpus "
        "(hint: did you mean 'ibm'? lots (named by --probe NAME=FILE): ibm)\n"
    )
    code, _, err = run_check(tmp_path, "  - gpu_links: {steps: [shards]}\n", "--probe", f"ibm={IBM}")
    assert code == 2 and err.startswith("topomap: error: reqs.yaml:2: rule gpu_links names step 'shards' but no flow")


def test_plan_total_refuses_a_host_it_would_ignore(tmp_path: Path) -> None:
    flow = str(SAMPLES / "flows" / "eight-documents.yaml")
    code, _, err = run_check(tmp_path, "  - plan_total: {max_minutes: 60, host: lot}\n", "--flow", flow)
    assert code == 2 and "reqs.yaml:2: rule plan_total takes no host" in err


# --- GPU models -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "name", "match"),
    [
        ("H100*", "NVIDIA H100 80GB HBM3", True),  # failed before: the glob met "NVIDIA …"
        ("*H100*", "NVIDIA H100 80GB HBM3", True),
        ("h100", "NVIDIA H100 80GB HBM3", True),
        ("H100 80GB", "NVIDIA H100 80GB HBM3", True),
        ("NVIDIA H100*", "NVIDIA H100 80GB HBM3", True),
        ("H10", "NVIDIA H100 80GB HBM3", False),
        ("H100-SXM", "NVIDIA H100 80GB HBM3", False),
        ("A100", "NVIDIA A100-SXM4-80GB", True),
        ("A100", "NVIDIA A100X", False),
        ("V100*", "Tesla V100-SXM2-16GB", True),
        ("RTX 4090", "NVIDIA GeForce RTX 4090", True),
        ("RTX*", "NVIDIA GeForce RTX 4090", True),
        ("GeForce*", "NVIDIA GeForce RTX 4090", True),
        ("4090*", "NVIDIA GeForce RTX 4090", False),
    ],
)
def test_model_patterns(pattern: str, name: str, match: bool) -> None:
    assert model_matches(pattern, name) is match


def test_model_prefix_glob_passes_on_h100_and_a_fail_lists_the_models_seen() -> None:
    lot = Lot("ibm", build(load_any(IBM)))
    reqs, _ = parse_requirements("requirements:\n  - gpus: {min_count: 8, model: 'H100*'}\n", "r.yaml")
    assert check(reqs, [lot], None).results[0].status == "pass"
    reqs, _ = parse_requirements("requirements:\n  - gpus: {min_count: 8, model: 'A100*'}\n", "r.yaml")
    res = check(reqs, [lot], None).results[0]
    seen = "models seen: NVIDIA H100 80GB HBM3 (derived from the PCI device id) ×8"
    assert res.status == "fail" and res.summary == f"0 GPUs qualify < 8 needed; {seen}"
    assert res.evidence[1] == seen and res.evidence[2].startswith("model 'A100*': GPU model, case-insensitive.")


def test_the_schema_says_how_a_model_matches() -> None:
    from topomap.check import requirements_json_schema

    model = requirements_json_schema()["$defs"]["GpusRule"]["properties"]["model"]
    assert "H100* and *H100* match 'NVIDIA H100 80GB HBM3'" in json.dumps(model)

"""Reading a run record (issue 23): the CPU timeline says which figure is its scale and which the peak
(the peak the host table shows), `diff` names runs by their --label with the file in brackets, and
a multi-line command is shown on several lines, never as ``\\x0a``.

Data: samples/records/one-card.json and two-cards.json (real host figures, recorded by
samples/records/make.py; GPU figures from the fake NVML named in their notes)."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
from typer.testing import CliRunner

from topomap.cli import app
from topomap.record.model import encode_run, load_run

RECORDS = Path(__file__).resolve().parents[2] / "samples" / "records"
runner = CliRunner()


def _copy(tmp_path: Path, name: str, src: str, **changes: object) -> Path:
    run = msgspec.structs.replace(load_run(RECORDS / src), **changes)
    out = tmp_path / name
    out.write_bytes(encode_run(run))
    return out


def test_cpu_timeline_scale_is_labelled_and_its_peak_is_the_tables() -> None:
    out = runner.invoke(app, ["show", str(RECORDS / "one-card.json")]).stdout
    line = next(x for x in out.splitlines() if x.strip().startswith("host tree"))
    scale = re.search(r"█ = (\d+) % \((\d+) CPUs\), peak ([\d.]+ %)", line)
    assert scale is not None, line
    assert int(scale.group(1)) == 100 * int(scale.group(2))  # the scale: every CPU of the host busy
    table_peak = re.search(r"tree CPU peak\s*(?:│\s*)?([\d.]+ %) of one CPU", out)
    assert table_peak is not None and table_peak.group(1) == scale.group(3)  # the same peak, both places
    assert "top 200 %" not in out


def test_diff_names_runs_by_label_with_the_file_in_brackets(tmp_path: Path) -> None:
    a = _copy(tmp_path, "run-1.json", "one-card.json", label="baseline")
    b = _copy(tmp_path, "run-2.json", "two-cards.json", label="two GPUs")
    out = runner.invoke(app, ["diff", str(a), str(b)]).stdout
    assert "two GPUs [run-2.json] did better" in out
    assert "baseline [run-1.json]" in out
    plain = _copy(tmp_path, "run-3.json", "two-cards.json", label=None)
    assert "run-3 did better" in runner.invoke(app, ["diff", str(a), str(plain)]).stdout


def test_a_multi_line_command_is_shown_on_several_lines(tmp_path: Path) -> None:
    script = "import torch\nprint(torch.cuda.device_count())"
    run = _copy(tmp_path, "ml.json", "one-card.json", command=["python", "-c", script], label="probe")
    out = runner.invoke(app, ["show", str(run)]).stdout
    assert "\\x0a" not in out
    assert "Run of python -c 'import torch\n    print(torch.cuda.device_count())' [probe]\n" in out
    other = runner.invoke(app, ["diff", str(run), str(RECORDS / "two-cards.json")]).stdout
    assert "\\x0a" not in other and "      print(torch.cuda.device_count())'" in other

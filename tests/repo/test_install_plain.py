"""`pip install topomap` with no extras (issue 33 item 8): every view works on a laptop without the
NVIDIA bindings, psutil or matplotlib, and the commands that need them say in one line what to
install. A ``sitecustomize`` on PYTHONPATH makes those packages unimportable in a real subprocess,
as on a machine where they were never installed (a fresh venv per run would need the index)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = ("pynvml", "cuda", "psutil", "matplotlib")  # probe, record, plot
BLOCKER = f'''"""Installed by tests/repo/test_install_plain.py: the extras' modules are not installed here."""
import os
import sys

BLOCKED = tuple(os.environ.get("TOPOMAP_TEST_BLOCK", "{",".join(EXTRAS)}").split(","))


class _NotInstalled:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled)
'''
SNAP = str(SAMPLES / "snapshots" / "hgx-a100-8gpu-8nic.json")
OTHER = str(SAMPLES / "snapshots" / "dgx1-v100.json")
FLOW = str(SAMPLES / "flows" / "two-host-pipeline.yaml")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a subprocess that cannot import the extras."""
    site = tmp_path_factory.mktemp("plain-site")
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COLUMNS")}
    env.update(PYTHONPATH=f"{site}{os.pathsep}{ROOT}", NO_COLOR="1", TERM="dumb")
    return env


def _topomap(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "topomap", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_blocker_makes_the_extras_unimportable(plain: dict[str, str]) -> None:
    code = "import importlib\nfor m in ('pynvml', 'cuda.bindings', 'psutil', 'matplotlib', 'networkx'):\n"
    code += "    try:\n        importlib.import_module(m); print(m, 'imports')\n"
    code += "    except ImportError: print(m, 'missing')\n"
    r = subprocess.run([sys.executable, "-c", code], env=plain, capture_output=True, text=True, timeout=60)
    assert r.stdout.split("\n")[:-1] == [
        "pynvml missing",
        "cuda.bindings missing",
        "psutil missing",
        "matplotlib missing",
        "networkx imports",
    ], r.stderr


def test_every_module_but_the_record_runner_imports_without_the_extras(plain: dict[str, str]) -> None:
    code = (
        "import importlib, pkgutil, topomap\n"
        "for m in pkgutil.walk_packages(topomap.__path__, 'topomap.'):\n"
        "    if m.name.endswith('__main__'): continue\n"
        "    try: importlib.import_module(m.name)\n"
        "    except ImportError as err: print(m.name, err.name)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], env=plain, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    # the runner, its process tree and the host sampler are `topomap record` alone; reading a record
    # needs none of them
    assert sorted(r.stdout.splitlines()) == [
        "topomap.record.host psutil",
        "topomap.record.runner psutil",
        "topomap.record.tree psutil",
    ]


REQS = str(SAMPLES / "requirements" / "tensor-parallel.yaml")
TP = str(SAMPLES / "flows" / "tensor-parallel.yaml")


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["show", SNAP], 0, "GPUs: memory, placement and links"),
        (["matrix", SNAP], 0, "GPU0\t X \tNV12"),
        (["map", FLOW], 0, "2   stage1 → stage2   activations   1        network       roce NET   25.0 GB/s spec"),
        (["diff", SNAP, OTHER], 1, "8 GPU pairs: NV12 → NV1"),
        (["show", str(SAMPLES / "records" / "two-cards.json")], 0, "Per card (observed, NVML): 2× NVIDIA GeForce"),
        (["check", REQS, "--probe", f"lot={SNAP}", "--flow", TP], 0, "PASS"),
        (["nccl", SNAP], 0, "predicted for 56 rank pairs: 56 P2P (p2p-nvlink)"),
        (["place", SNAP, "--gpus", "2"], 0, "2 GPU(s) for pattern tp: gpu0, gpu1"),
    ],
    ids=["show", "matrix", "map", "diff", "show-record", "check", "nccl", "place"],
)
def test_the_views_run_without_the_extras(plain: dict[str, str], args: list[str], code: int, needle: str) -> None:
    r = _topomap(plain, *args)
    assert r.returncode == code, r.stderr
    assert needle in r.stdout and "Traceback" not in r.stderr


def test_render_draws_without_the_extras(plain: dict[str, str], tmp_path: Path) -> None:
    assert _topomap(plain, "render", FLOW, "-o", str(tmp_path / "f.dot")).returncode == 0
    assert _topomap(plain, "render", SNAP, "-o", str(tmp_path / "t.graphml")).returncode == 0
    assert (tmp_path / "f.dot").read_text().startswith("digraph") and "stage1" in (tmp_path / "f.dot").read_text()
    assert "<graphml" in (tmp_path / "t.graphml").read_text()


@pytest.mark.parametrize(
    ("args", "code", "line"),
    [
        (
            ["probe"],
            3,
            "topomap: error: probe needs the NVIDIA bindings: nvidia-ml-py and cuda-bindings are not installed "
            "here, so nothing can be probed (hint: pip install -e '.[probe]' in the topomap checkout, or "
            "pip install 'topomap[probe]')",
        ),
        (
            ["measure", SNAP],
            3,
            "topomap: error: measure needs the NVIDIA bindings: nvidia-ml-py and cuda-bindings are not installed "
            "here, so nothing can be measured (hint: pip install -e '.[probe]' in the topomap checkout, or "
            "pip install 'topomap[probe]')",
        ),
        (
            ["record", "-o", "run.json", "--", "true"],
            2,
            "topomap: error: record needs psutil, which is not installed here (hint: pip install -e '.[record]' "
            "in the topomap checkout, or pip install 'topomap[record]')",
        ),
    ],
    ids=["probe", "measure", "record"],
)
def test_the_commands_that_need_an_extra_say_which_in_one_line(
    plain: dict[str, str], tmp_path: Path, args: list[str], code: int, line: str
) -> None:
    r = _topomap(plain, *args, cwd=tmp_path)
    assert (r.returncode, r.stderr, r.stdout) == (code, line + "\n", "")
    assert list(tmp_path.iterdir()) == []  # nothing written, no host-only snapshot, no record


def test_with_one_binding_missing_the_probe_goes_on_and_records_what_to_install(
    plain: dict[str, str], tmp_path: Path
) -> None:
    """nvidia-ml-py without cuda-bindings (an image that ships one): the probe runs (here no driver
    answers: exit 3, a host-only snapshot) and the snapshot's problem says what to install."""
    import json

    env = {**plain, "TOPOMAP_TEST_BLOCK": "cuda"}
    r = _topomap(env, "probe", "-o", str(tmp_path / "p.json"), cwd=tmp_path)
    assert r.returncode == 3 and "needs the NVIDIA bindings" not in r.stderr, r.stderr
    problems = json.loads((tmp_path / "p.json").read_text())["problems"]
    assert {
        "source": "cuda",
        "call": "import cuda.bindings",
        "error": "cuda-bindings not installed (No module named 'cuda'): pip install 'topomap[probe]'",
    }.items() <= next(p for p in problems if p["source"] == "cuda").items()

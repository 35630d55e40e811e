"""scripts/device-check.sh in a simulation of the device image (issue 25 item 2): the image's
packages (nvidia-ml-py, networkx, typer, rich) in a parent venv, no package index, no GPU. The
run half must install what it carries, import every module and end with "no GPU"."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "device-check.sh"
PYVER = f"{sys.version_info.major}.{sys.version_info.minor}"  # the simulated image's Python


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the image's interpreter, the prepared wheels): prepared here, with the package index."""
    tmp = tmp_path_factory.mktemp("device")
    wheels = tmp / "wheels"
    env = {**os.environ, "TOPOMAP_WHEELS": str(wheels), "DEVICE_PYTHON": PYVER, "PYTHON": sys.executable}
    prep = subprocess.run([str(SCRIPT), "--prepare"], env=env, capture_output=True, text=True, timeout=600)
    assert prep.returncode == 0, prep.stderr
    venv.create(tmp / "image", with_pip=True)
    py = tmp / "image" / "bin" / "python"
    pip = subprocess.run([str(py), "-m", "pip", "install", "-q", "nvidia-ml-py", "networkx", "typer<0.29", "rich"],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    return py, wheels


def test_prepare_gathers_every_wheel_the_image_lacks(image: tuple[Path, Path]) -> None:
    _, wheels = image
    names = {p.name.split("-")[0].lower() for p in wheels.glob("*.whl")}
    assert {"topomap", "msgspec", "defusedxml", "graphviz", "jinja2", "markupsafe", "pyyaml", "psutil"} <= names
    assert not names & {"nvidia_ml_py", "cuda_bindings", "matplotlib"}  # the machine's own, or not needed


def test_run_half_installs_without_index_imports_everything_and_says_no_gpu(
    image: tuple[Path, Path], tmp_path: Path
) -> None:
    py, wheels = image
    bare_path = ":".join(p for p in os.environ.get("PATH", "").split(":") if not (Path(p) / "nvidia-smi").exists())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    env.update(PATH=bare_path, PYTHON=str(py), TOPOMAP_WHEELS=str(wheels), PIP_NO_INDEX="1",
               PIP_FIND_LINKS=str(wheels), PIP_CONFIG_FILE=os.devnull)  # fmt: skip
    out = tmp_path / "out"
    r = subprocess.run([str(SCRIPT), str(out)], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("device-check: no GPU")
    assert (out / "result.txt").read_text() == "no GPU\n"
    imports = (out / "imports.txt").read_text()
    assert f"topomap from {out / 'site' / 'topomap' / '__init__.py'}" in imports  # the wheel, not the checkout
    assert imports.strip().endswith("everything imports")
    site = {p.name.split("-")[0].lower() for p in (out / "site").glob("*.dist-info")}
    assert {"topomap", "msgspec", "defusedxml", "pyyaml", "psutil", "graphviz", "jinja2", "markupsafe"} <= site
    assert "typer" not in site and "networkx" not in site  # the image's own copies were good enough
    assert (out / "probe.json").is_file()


def test_run_half_without_prepared_wheels_says_how(tmp_path: Path) -> None:
    env = {**os.environ, "TOPOMAP_WHEELS": str(tmp_path / "none")}
    r = subprocess.run([str(SCRIPT), str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--prepare" in r.stderr


def _compare_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("device_compare", ROOT / "scripts" / "device_compare.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_matrix_comparison_takes_unknown_gpu_numa_id_as_nvidia_smis_na() -> None:
    diff = _compare_module().matrix_differences
    ours = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-31\t0\t\t?\n"
    smi = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-31\t0\t\tN/A\n"
    assert diff(ours, smi) == []
    assert diff(ours.replace("0-31", "32-63"), smi) == ["token 10: topomap '32-63', nvidia-smi '0-31'"]

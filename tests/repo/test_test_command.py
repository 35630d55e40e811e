"""The README's test command is the full run (issue 33 item 10): CI runs it verbatim, it installs
the system packages the tests use through scripts/install-test-deps.sh (the one script both call),
and that script says in one line what is missing where it cannot install."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-test-deps.sh"


def readme_test_command() -> str:
    """The one line of the README's "Run the tests" code block."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Run the tests") :]
    block = re.search(r"```sh\n(.*?)\n```", section, re.S)
    assert block is not None and "\n" not in block.group(1), "one command line under 'Run the tests'"
    return block.group(1)


def test_ci_runs_the_readme_test_command_verbatim_then_the_docs_and_the_version_matrix() -> None:
    command = readme_test_command()
    assert command.startswith("bash scripts/install-test-deps.sh && pip install")
    assert command.endswith("python -m pytest -q && ruff check topomap tests && mypy && lint-imports")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    lines = [i for i, line in enumerate(ci) if line == f"{command} || exit 1"]
    assert len(lines) == 1, ".ci/run must run the README's test command verbatim, once"
    after = "\n".join(ci[lines[0] :])
    assert "mkdocs build --strict" in after and "pytest" in after.split("Version matrix")[1]
    page = (ROOT / "docs" / "design" / "tests.md").read_text()
    assert f"```sh\n{command}\n```" in page, "docs/design/tests.md shows the README's test command as it is"


def test_the_script_installs_what_the_skipped_tests_name() -> None:
    """Each package a test's skip reason or failure points to is one the script installs."""
    script = SCRIPT.read_text()
    for package in ("graphviz", "chromium", "slurmctld slurmd slurm-client munge", "gcc libc6-dev", "pdsh"):
        assert f"missing+=({package})" in script
    assert (
        "apt-get install -y slurmctld slurmd slurm-client munge"
        in (ROOT / "tests" / "slurm" / "cluster.py").read_text()
    )


def _bare_path(tmp_path: Path, keep: tuple[str, ...]) -> str:
    """A PATH holding only ``keep`` (links to the real programs): no apt-get, no dot, no pdsh."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in keep:
        real = shutil.which(name)
        assert real is not None
        (bin_dir / name).symlink_to(real)
    return str(bin_dir)


def test_without_apt_get_the_script_names_what_is_missing_in_one_line(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    env = {"PATH": _bare_path(tmp_path, ("id",)), "HOME": os.environ.get("HOME", "/")}
    r = subprocess.run([bash, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("install-test-deps: no apt-get here: install Graphviz dot, ")
    assert lines[0].endswith(" yourself, or the tests that need them skip") and "pdsh" in lines[0]


def test_with_everything_installed_the_script_does_nothing() -> None:
    """Here (and in CI after its first run) every package is there: no apt-get, no output."""
    present = all(shutil.which(p) or Path("/usr/sbin", p).exists() for p in ("dot", "slurmctld", "cc", "pdsh"))
    if not present or not (shutil.which("chromium") or shutil.which("chromium-browser")):
        return  # a machine without them: the script would install them, which a test must not do
    r = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")

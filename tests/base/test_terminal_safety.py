"""No control, bidirectional or separator character from an input ever reaches the terminal raw (issue
36 item 3: `topomap nccl SNAP` printed the snapshot's origin and NIC names raw — ESC, OSC and ``\\e[2J``
cleared or retitled a real terminal; the one-line errors quoted raw what the input smuggled in, library
messages too; U+2028, U+2029 and U+0085 forged lines in `show`, `map`, `matrix` and `show RUN`; U+202E
and U+200F passed).

Every such character — all of C0 and C1 with DEL, U+061C, U+200E/F, U+202A–E, U+2066–9, U+2028/9, and a
lone surrogate where JSON can carry one — is put into names of a snapshot, a merged cluster, a flow, a
requirements file, a run record, an NCCL log, file names and option values. Every view and every error
path is run through the real entry point, piped and on a (forced) terminal; stdout and stderr may hold
a tab and a newline as layout, and on the terminal rich's own colour codes, and nothing else of them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.cli.test_option_fuzz import _invoke
from tests.conftest import SAMPLES
from topomap.base.safetext import UNSAFE, escape_char, is_safe, json_bytes, json_text, safe_text

ROOT = Path(__file__).resolve().parents[2]
#: Every character the rule escapes that a UTF-8 file can hold (no lone surrogate: JSON escapes carry one).
EVERY = [chr(c) for c in range(0x110000) if UNSAFE.match(chr(c)) and not 0xD800 <= c <= 0xDFFF]
CHUNK = 12


def _chunks(chars: list[str] = EVERY) -> list[str]:
    """The characters in short names (views cut long names), each name marked (``n3:…|``)."""
    return [f"n{k}:" + "".join(chars[i : i + CHUNK]) + "|" for k, i in enumerate(range(0, len(chars), CHUNK))]


NAMES = _chunks()
LINE_SAFE = [c for c in EVERY if c not in "\n\r\0"]  # in a line of a text file (a NUL makes it binary)
#: XML 1.0 holds no C0 control but tab, newline and return (not even as a reference), nor U+FFFE/F.
XML_SAFE = [c for c in EVERY if (0x7F <= ord(c) < 0xFFFE) or c == "\t"]
SGR = re.compile(r"\x1b\[[0-9;]*m")


def test_the_rule_escapes_every_one_of_them() -> None:
    assert len(EVERY) + 2048 == 2129  # C0 32, DEL and C1 33, bidi 12, separators 2, U+FFFE/F; surrogates
    for c in [*EVERY, "\ud800", "\udfff"]:
        shown = safe_text(f"a{c}b")
        assert shown == f"a{escape_char(c)}b" and is_safe(shown), repr(c)
        assert json.loads(json_text(json.dumps(c, ensure_ascii=False))) == c
        if not 0xD800 <= ord(c) <= 0xDFFF:
            raw = json.dumps({"k": c}, ensure_ascii=False).encode()
            assert json.loads(json_bytes(raw)) == {"k": c} and is_safe(json_bytes(raw).decode(), "\t\n\r")
    assert safe_text("x\ty\nz", keep="\t\n") == "x\ty\nz"


# --- the inputs ---------------------------------------------------------------------------------


def _snapshot(path: Path, names: list[str], host: str = "") -> Path:
    """The HGX H200 sample with every name hostile: host, origin, GPU models, NIC names, notes, problems."""
    d = json.loads((SAMPLES / "snapshots" / "hgx-h200-8gpu-10nic.json").read_text())
    it = iter(names * 4)
    d["host"]["hostname"] = host or next(it)
    d["source"]["origin"] = next(it)
    d["source"]["notes"] = [next(it), next(it)]
    for g in d["gpus"]:
        g["name"] = "NVIDIA H200 " + next(it)
    for k, n in enumerate(d["nics"]):
        n["name"] = f"{next(it)}{k}"  # each NIC its own name
    d["problems"] = [{"source": "nvml", "call": next(it), "target": next(it), "error": next(it)}]
    path.write_text(json.dumps(d))
    return path


def _run(path: Path, names: list[str]) -> Path:
    d = json.loads((SAMPLES / "records" / "one-card.json").read_text())
    it = iter(names * 4)
    d["label"], d["hostname"], d["cwd"] = next(it), next(it), next(it)
    d["command"] = [next(it), next(it)]
    d["notes"] = [next(it)]
    d["environment"] = {"CUDA_VISIBLE_DEVICES": next(it)}
    for g in d["gpus"]:
        g["id"] = g.get("id", "gpu0")
        for p in g.get("processes") or []:
            p["name"] = next(it)
    path.write_text(json.dumps(d))
    return path


def _yaml(text: str) -> str:
    """A YAML double-quoted scalar holding ``text`` (every character as an escape YAML reads)."""
    return '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in text) + '"'


def _flow(path: Path, snap: Path, names: list[str]) -> Path:  # inline: every name as YAML escapes is under test
    steps = {f"s{k}": n for k, n in enumerate(names[:4])}
    lines = [f"flow: {_yaml(names[4])}", f"description: {_yaml(names[5])}", "hosts:", f"  lot: {snap}"]
    lines += ["work: {count: 4, duration: 12 min}", "steps:", f"  {_yaml(names[-1])}: {{kind: compute, on: lot:gpus}}"]
    for k, n in enumerate(steps.values()):
        lines.append(f"  {_yaml(n)}: {{kind: compute, on: lot:gpu{k}, label: {_yaml(names[(k + 6) % len(names)])}}}")
    lines += [
        "arrows:",
        f"  - {{from: {_yaml(names[0])}, to: {_yaml(names[1])}, volume: 1 GiB, label: {_yaml(names[2])}}}",
    ]
    lines += [f"  - {{from: {_yaml(names[2])}, to: {_yaml(names[3])}, volume: 1 GiB, nccl: true}}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _reqs(path: Path, names: list[str]) -> Path:
    path.write_text(
        "requirements:\n"
        f"  - gpus: {{min_count: 2, model: {_yaml(names[0])}}}\n"
        "  - gpu_links: {min: nvlink}\n"
        "  - gpu_groups: {k: 4}\n"
    )
    return path


def _log(path: Path, chars: list[str]) -> Path:
    """A real NCCL log whose NIC names, environment values, GPU models and channel lines hold the
    characters (every one but a line end, which would only end the line)."""
    text = (
        ROOT / "tests" / "data" / "real-nccl-logs" / "a100-leonardo-2gpu-p2p-level-nvl-nccltests331.log"
    ).read_text()
    bits = _chunks(chars)
    extra = [f"lrdn2296:4063850:4063850 [0] NCCL INFO NCCL_IB_HCA set by environment to {bits[0]}",
             f"lrdn2296:4063850:4063850 [0] NCCL INFO NET/IB : Using [0]mlx5_{bits[1]}:1/IB ; OOB ib0:10.0.0.1<0>",
             f"lrdn2296:4063850:4063850 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/{bits[2]}",
             f"#  Rank  9 Group  0 Pid 4063850 on   lrdn2296 device  0 [0000:1d:00] NVIDIA {bits[3]}"]  # fmt: skip
    extra += [f"lrdn2296:4063850:4063850 [0] NCCL INFO {b}" for b in bits[4:]]
    path.write_text(text + "\n".join(extra) + "\n")
    return path


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("hostile")
    files = {
        "snap": _snapshot(d / "snap.json", NAMES),
        "snap2": _snapshot(d / "snap2.json", NAMES[::-1]),
        "run": _run(d / "run.json", NAMES),
        "run2": _run(d / "run2.json", NAMES[::-1]),
        "log": _log(d / "nccl.log", LINE_SAFE),
        "reqs": _reqs(d / "reqs.yaml", NAMES),
    }
    files["flow"] = _flow(d / "flow.yaml", files["snap"], NAMES)
    code, _, err, _ = _invoke(["merge", f"a={files['snap']}", f"b={files['snap2']}", "-o", str(d / "cluster.json")], 60)
    assert code == 0, err
    files["cluster"] = d / "cluster.json"
    named = d / ("evil" + "".join(c for c in LINE_SAFE if c not in "/\0")[:60] + ".json")  # a file name
    shutil.copy(files["snap"], named)
    files["named"] = named
    bad = json.loads(files["snap"].read_text())
    bad["host"]["evil" + "".join(EVERY[:20])] = 1  # msgspec: Object contains unknown field `…`
    (d / "unknown-field.json").write_text(json.dumps(bad))
    files["unknown-field"] = d / "unknown-field.json"
    lone = files["snap"].read_text().replace('"notes": [', '"notes": ["\\ud800 lone", ', 1)  # msgspec refuses it
    (d / "surrogate.json").write_text(lone)
    files["surrogate"] = d / "surrogate.json"
    (d / "bad-flow.yaml").write_text(files["flow"].read_text() + f"{_yaml(NAMES[3])}: 1\n")
    files["bad-flow"] = d / "bad-flow.yaml"
    (d / "bad-place.yaml").write_text(
        files["flow"].read_text().replace("on: lot:gpu0", f"on: {_yaml('lot:' + NAMES[1])}")
    )
    files["bad-place"] = d / "bad-place.yaml"
    (d / "yaml-error.yaml").write_text("flow: x\nsteps: {a: [\n  " + "".join(LINE_SAFE) + "\n")
    files["yaml-error"] = d / "yaml-error.yaml"
    xml = (ROOT / "tests" / "data" / "real-topologies" / "nccl-xml" / "ibm-cloud-gx3d-h100-8gpu-vsi.xml").read_text()
    for k, bit in enumerate(_chunks(XML_SAFE)):  # NIC names that NCCL's XML carries
        xml = xml.replace(f'name="mlx5_{k}"', f'name="{bit.replace("&", "&amp;").replace("<", "&lt;")}"')
    (d / "xml.xml").write_text(xml)
    files["xml"] = d / "xml.xml"
    return files


def _views(f: dict[str, Path], out: Path) -> list[list[str]]:
    """Every view of every input, and the error paths: what a user can run on them."""
    s, s2, run, run2, flow, reqs = (str(f[k]) for k in ("snap", "snap2", "run", "run2", "flow", "reqs"))
    evil = NAMES[5]
    return [
        ["show", s], ["show", "--json", s], ["matrix", s], ["matrix", "--json", s], ["matrix", "--bandwidth", s],
        ["nccl", s], ["nccl", "--json", s], ["nccl", "--log", str(f["log"])],
        ["nccl", "--log", str(f["log"]), "--json"],
        ["map", flow], ["map", "--all", flow], ["map", "--json", flow], ["plan", flow], ["place", s, "--gpus", "2"],
        ["place", s, "--gpus", "2", "--nics", "--json"], ["place", flow, "--gpus", "2"], ["check", reqs, flow],
        ["check", reqs, s], ["check", "--json", reqs, s], ["diff", s, s2], ["diff", "--json", s, s2],
        ["diff", flow, s, s2], ["cluster", str(f["cluster"])], ["cluster", "--json", str(f["cluster"])],
        ["show", str(f["cluster"])], ["check", reqs, str(f["cluster"])], ["show", run], ["show", "--json", run],
        ["diff", run, run2], ["import", s, "-o", "-"], ["merge", s, s2, "-o", "-"], ["show", str(f["named"])],
        ["render", s, "-o", "-", "--format", "dot"], ["render", flow, "-o", "-", "--format", "dot"],
        ["report", flow, "-o", "-"], ["show", str(f["xml"])], ["nccl", str(f["xml"])],
        ["place", str(f["xml"]), "--gpus", "2", "--nics"],
        # error paths: a library's message, a name, a path, an option's value
        ["show", str(f["unknown-field"])], ["show", str(f["surrogate"])], ["map", str(f["bad-flow"])],
        ["map", str(f["bad-place"])],
        ["map", str(f["yaml-error"])], ["show", str(f["named"]) + evil], ["show", evil],
        ["place", s, "--gpus", "2", "--exclude", evil], ["place", s, "--gpus", "2", "--pattern", evil],
        ["render", s, "-o", "-", "--format", evil], ["render", s, "-o", str(out / f"x{evil}.svg")],
        ["render", s, "-o", str(out / f"x{evil}")], ["matrix", s, "--p2p", evil], ["diff", s, s2, "--match", evil],
        ["nccl", s, "--env", evil], ["nccl", s, "--ranks", evil], ["nccl", s, "--nccl-version", evil],
        ["plan", flow, "--cards", evil], ["merge", f"{evil}={s}", s2, "-o", str(out / "m.json")],
        ["import", s, "--format", evil], ["schema", evil], ["record", "--interval", evil, "--", "true"],
        ["record", "-o", str(out / "r.json"), "--label", evil, "--", "sh", "-c", f"printf '%s' '{NAMES[-1]}' >&2"],
        [evil], ["show", s, f"--{evil}"], ["map", flow, f"lot={f['snap']}", f"{evil}={s}"],
    ]  # fmt: skip


def _raw(text: str, terminal: bool) -> list[str]:
    """The characters of the rule in ``text`` beyond its layout (tab, newline) and, on a terminal, rich's
    colour codes."""
    if terminal:
        text = SGR.sub("", text)
    return sorted({f"U+{ord(c):04X}" for c in UNSAFE.findall(text) if c not in "\t\n"})


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_no_view_and_no_error_lets_one_reach_the_terminal(
    hostile: dict[str, Path], tmp_path: Path, terminal: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if terminal:  # rich takes this for a terminal (isatty in a real one): colours, widths, the terminal path
        monkeypatch.setenv("TTY_COMPATIBLE", "1")
        monkeypatch.setenv("FORCE_COLOR", "1")
        monkeypatch.setenv("COLUMNS", "100")
    escaped_somewhere = False
    failures = []
    for argv in _views(hostile, tmp_path):
        code, out, err, escaped = _invoke(argv, 60)
        assert escaped is None and code in (0, 1, 2, 3), (argv, code, err[-300:])
        for stream, text in (("stdout", out), ("stderr", err)):
            raw = _raw(text, terminal)
            if raw:
                failures.append(f"{argv[:3]} {stream}: {raw[:12]}")
        escaped_somewhere |= "\\u2028" in out + err or "\\x1b" in out + err
    assert not failures, "\n".join(failures)
    assert escaped_somewhere  # the names did reach the views, escaped


def test_each_name_of_a_view_shows_its_characters_escaped(hostile: dict[str, Path]) -> None:
    """The names are not dropped: `show` writes the host name and the NIC names with every character
    as its escape, and `show RUN` the run's label."""
    code, out, _, _ = _invoke(["show", str(hostile["snap"])], 60)
    assert code == 0
    shown = safe_text(NAMES[0]).replace("\\x0a", "\\x0a")
    assert shown in out, shown
    code, out, _, _ = _invoke(["show", str(hostile["run"])], 60)
    assert code == 0 and safe_text(NAMES[0]) in out

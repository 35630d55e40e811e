"""Hostile and messy YAML in flow and requirements files (issue 14): every failure is one line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from topomap.base.errors import TopomapError
from topomap.check import RequirementsError, parse_requirements
from topomap.files.yamlfile import MAX_ALIASES, MAX_DEPTH, load_yaml
from topomap.flow import parse_flow
from topomap.flow.spec import FlowError

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
FLOW = """flow: t
hosts:
  lot: ../snapshots/dgx1-v100.json
steps:
  a: {kind: input, on: lot:memory}
  b: {kind: compute, on: lot:gpu0}
arrows:
  - {from: a, to: b}
"""


def refused(text: str, *fragments: str) -> str:
    with pytest.raises(TopomapError) as err:
        load_yaml(text, "f.yaml", "flow file")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("f.yaml"), msg
    for f in fragments:
        assert f in msg, msg
    return msg


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a: 1\n...\nb: c: d\n", "f.yaml:3: not valid YAML"),  # parser error at the end of a document
        ("a: 1\nb: x\x00y\n", "f.yaml:2: not valid YAML (character #x0000"),
        ("a: 1\nb: \x1b[31mred\n", "character #x001b"),
        ("a: \x0b\n", "character #x000b"),
        ("a: [1, 2\n", "not valid YAML"),
        ("a: 1\n---\nb: 2\n", "not valid YAML"),
    ],
)
def test_every_yaml_error_is_one_line(text: str, fragment: str) -> None:
    refused(text, fragment)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('a: !!binary "not base64!"\n', "f.yaml:1: tag !!binary is not allowed"),
        ("a: !!binary aGVsbG8=\n", "tag !!binary"),
        ("a: !!python/object/apply:os.system {args: [id]}\n", "tag !!python/object/apply:os.system"),
        ("a: !!python/object/apply:os.system [id]\n", "tag !!python/object/apply:os.system"),
        ("a: !!python/name:os.system\n", "!!python/name:os.system"),
        ("a: !!set {x, y}\n", "tag !!set"),
        ("a: !custom x\n", "tag !custom"),
        ("b: 1\n? [x, y]\n: 1\n", "f.yaml:2: a mapping or list used as a key"),
        ("? {x: 1}\n: 1\n", "a mapping or list used as a key"),
        ("a: 1\na: 2\n", "f.yaml:2: key 'a' appears twice"),
    ],
)
def test_tags_and_keys_safe_loading_would_not_give(text: str, fragment: str) -> None:
    refused(text, fragment)


def test_alias_bomb_refused_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]
    t = time.monotonic()
    refused("\n".join(lines) + "\n", f"more than {MAX_ALIASES} aliases")
    few = ["a0: &a0 [" + ", ".join(["x"] * 500) + "]"]
    few += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 15)]
    refused("\n".join(few) + "\n", "once aliases are expanded")
    assert time.monotonic() - t < 5


def test_deep_nesting_refused_without_recursion() -> None:
    # Ours refuses past MAX_DEPTH; PyYAML >= 6.0.4 refuses past 1000 itself, before our count is
    # reached, in its own words. The contract is ours either way: one line naming the file and line,
    # no RecursionError (libyaml's composer would overflow the C stack).
    refused("a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n", f"nested more than {MAX_DEPTH} levels deep")
    for n in (10_000, 1_000_000):
        refused("a: " + "[" * n + "]" * n + "\n", "f.yaml:1:")
    load_yaml("a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n", "f.yaml", "flow file")


def test_size_cap() -> None:
    refused("a: " + "x" * (9 * 1024 * 1024) + "\n", "larger than any flow file")


def test_plain_values_unchanged() -> None:
    doc = load_yaml("on: 2024-01-01\nn: 3\nf: 1.5\nb: yes\nz: null\nl: [a, 'b']\n", "f.yaml", "flow file")
    assert doc.data == {"on": "2024-01-01", "n": 3, "f": 1.5, "b": True, "z": None, "l": ["a", "b"]}
    assert doc.line("$.l") == 6


def test_enum_error_lists_values_and_suggests_the_closest() -> None:
    with pytest.raises(FlowError) as err:
        parse_flow(FLOW.replace("kind: input", "kind: inptu"), "f.yaml")
    msg = str(err.value)
    assert msg.startswith("f.yaml:5: Invalid enum value 'inptu'; expected one of ") and "(at steps.a.kind)" in msg
    assert all(k in msg for k in ("input", "compute", "exchange", "aggregate", "output"))
    assert err.value.hint == "did you mean `input`?"
    parse_flow(FLOW, "f.yaml")


def test_topology_given_where_yaml_expected(real: Path) -> None:
    paste = (real / "nvidia-smi" / "rtx3090-2gpu-nv4-club3090-rig-report.txt").read_text()
    with pytest.raises(RequirementsError) as err:
        parse_requirements(paste, "a-paste.txt")
    assert str(err.value) == "a-paste.txt: this is an `nvidia-smi` output (a topology), not a requirements file"
    assert err.value.hint is not None and "the requirements file comes first" in err.value.hint
    snap = (SAMPLES / "snapshots" / "dgx1-v100.json").read_text()
    with pytest.raises(FlowError, match=r"this is a topomap snapshot \(JSON\), not a flow file"):
        parse_flow(snap, "s.json")
    xml = (real / "nccl-xml" / "azure-ndv4.xml").read_text()
    with pytest.raises(FlowError, match="this is an NCCL topology XML"):
        parse_flow(xml, "t.xml")


def test_placement_typo_suggests_the_closest() -> None:
    with pytest.raises(FlowError) as err:
        parse_flow(FLOW.replace("on: lot:memory", "on: lot:memroy"), "f.yaml")
    assert str(err.value) == "f.yaml:5: step a: lot:memroy names no GPU, memory or storage"
    assert err.value.hint is not None and err.value.hint.startswith("did you mean lot:memory?")
    with pytest.raises(FlowError) as err:
        parse_flow("- just\n- a list\n", "f.yaml")
    assert err.value.hint is not None and "`flow: NAME`" in err.value.hint


def test_flow_given_where_a_topology_is_expected() -> None:
    from topomap.importers import load_any

    with pytest.raises(TopomapError) as err:
        load_any(SAMPLES / "flows" / "tensor-parallel.yaml")
    assert str(err.value).endswith("tensor-parallel.yaml: this is a flow file (YAML), not a topology or snapshot")
    assert err.value.hint is not None and err.value.hint.startswith("the flow file comes first: topomap map")


def test_absurd_volume_is_too_large_a_size() -> None:
    text = FLOW.replace("{from: a, to: b}", "{from: a, to: b, volume: 1" + "0" * 400 + " GiB}")
    too_large = r"^f.yaml:8: arrow 1: volume '10+…0+ GiB' \(407 characters\) is larger than 1 EB"
    with pytest.raises(FlowError, match=too_large):
        parse_flow(text, "f.yaml")


def test_a_run_record_where_a_flow_belongs_is_named_a_run_record() -> None:
    """A run record holds a snapshot: it is still called what it is, with where it belongs."""
    from topomap.flow import read_flow

    with pytest.raises(TopomapError) as err:
        read_flow(Path(__file__).resolve().parents[2] / "samples" / "records" / "one-card.json")
    assert "this is a topomap run record (JSON, from `topomap record`), not a flow file" in str(err.value)
    assert err.value.hint is not None and "plan --observed" in err.value.hint


def test_yaml_errors_carry_a_hint_and_tabs_are_named() -> None:
    with pytest.raises(FlowError) as err:
        parse_flow("flow: f\nhosts:\n\tlot: null\n", "f.yaml")
    assert str(err.value).startswith("f.yaml:3: not valid YAML")
    assert err.value.hint == "YAML does not allow tabs for indentation: indent with spaces"
    with pytest.raises(FlowError) as err:
        parse_flow("flow: f\nhosts: [a\n", "f.yaml")
    assert err.value.hint is not None and "indentation" in err.value.hint

"""YAML files for people: safe loading, the line of every key, and strict conversion whose
errors read `file:line: message (at path)` with a "did you mean" hint."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml

from topomap.errors import TopomapError


class YamlError(TopomapError):
    """A mistake in a YAML input file: one line with the file, line and a hint."""


@dataclass
class YamlDoc:
    origin: str
    data: Any
    lines: dict[str, int]  # JSON-ish path ("$.steps.convert.on") → 1-based line

    def line(self, path: str) -> int:
        p = path
        while p:
            if p in self.lines:
                return self.lines[p]
            shorter = re.sub(r"(\.[^.\[]+|\[\d+\])$", "", p)
            if shorter == p:
                break
            p = shorter
        return 1


def _to_python(node: yaml.Node, path: str, lines: dict[str, int], origin: str, exc: type[YamlError]) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else yaml.safe_load(yaml.serialize(k))
            if key in out:
                raise exc(f"{origin}:{k.start_mark.line + 1}: key {key!r} appears twice")
            child = f"{path}.{key}"
            lines[child] = k.start_mark.line + 1
            out[key] = _to_python(v, child, lines, origin, exc)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_to_python(v, f"{path}[{i}]", lines, origin, exc) for i, v in enumerate(node.value)]
    return yaml.safe_load(yaml.serialize(node))


def load_yaml(text: str, origin: str, what: str, exc: type[YamlError] = YamlError) -> YamlDoc:
    """Parse YAML (safe loader) keeping each key's line; ``what`` names the file kind in errors."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as err:
        line = err.problem_mark.line + 1 if err.problem_mark else 1
        raise exc(f"{origin}:{line}: not valid YAML ({err.problem})") from err
    if node is None:
        raise exc(f"{origin}:1: empty {what}")
    lines: dict[str, int] = {}
    return YamlDoc(origin=origin, data=_to_python(node, "$", lines, origin, exc), lines=lines)


def read_yaml(path: str | Path, what: str, exc: type[YamlError] = YamlError) -> YamlDoc:
    from topomap.inputs import MAX_YAML_BYTES
    from topomap.inputs import read_text as read_input

    p = Path(path)
    return load_yaml(read_input(p, what, MAX_YAML_BYTES, exc), str(p), what, exc)


def convert(
    doc: YamlDoc,
    value: Any,
    typ: type[Any],
    where: str,
    known: Callable[[str], list[str]],
    renames: dict[str, str] | None = None,
    exc: type[YamlError] = YamlError,
) -> Any:
    """msgspec.convert with errors as `file:line: message (at path)`; ``known(path)`` lists the
    keys allowed at a path, for the "did you mean" hint."""
    try:
        return msgspec.convert(value, typ)
    except msgspec.ValidationError as err:
        msg = str(err)
        m = re.search(r" - at `\$([^`]*)`$", msg)
        at = where + (m.group(1) if m else "")
        msg = re.sub(r" - at `\$[^`]*`$", "", msg)
        line = doc.line(at)
        hint = None
        u = re.match(r"Object contains unknown field `([^`]+)`", msg)
        if u:
            line = doc.line(f"{at}.{u.group(1)}")
            keys = known(at)
            close = difflib.get_close_matches(u.group(1), keys, n=1)
            hint = f"did you mean `{close[0]}`?" if close else f"known keys: {', '.join(keys)}"
        for old, new in (renames or {}).items():
            msg = msg.replace(f"`{old}`", f"`{new}`")
        place = at.replace("$.", "").replace("$", "") or "top level"
        raise exc(f"{doc.origin}:{line}: {msg} (at {place})", hint=hint) from err

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
import msgspec.inspect
import yaml

from topomap.base.errors import TopomapError
from topomap.files.inputs import MAX_YAML_BYTES
from topomap.files.inputs import read_text as read_input
from topomap.files.kind import describe


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


# Limits far above any hand-written flow or requirements file (issue 14: alias bombs, deep nesting).
MAX_DEPTH = 64  # nested mappings/lists
MAX_ALIASES = 100  # `*name` references
MAX_NODES = 200_000  # values after aliases are expanded
_PLAIN = "tag:yaml.org,2002:"
# The tags whose values are plain data; a timestamp-looking scalar is kept as its text.
_ALLOWED_TAGS = {f"{_PLAIN}{t}" for t in ("null", "bool", "int", "float", "str", "seq", "map", "timestamp")}
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: faster, same marks


class _Builder:
    """Composed YAML nodes → plain Python values, with the line of every key; refuses what
    safe loading would not construct, complex keys, deep nesting and alias expansion bombs."""

    def __init__(self, origin: str, exc: type[YamlError]) -> None:
        self.origin, self.exc = origin, exc
        self.lines: dict[str, int] = {}
        self.nodes = 0
        self.scalars = yaml.constructor.SafeConstructor()

    def fail(self, node: yaml.Node, message: str, hint: str | None = None) -> YamlError:
        return self.exc(f"{self.origin}:{node.start_mark.line + 1}: {message}", hint=hint)

    def build(self, node: yaml.Node, path: str, depth: int = 0) -> Any:
        self.lines.setdefault(path, node.start_mark.line + 1)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(node, f"more than {MAX_NODES:,} values once aliases are expanded (`*name` references)")
        if depth > MAX_DEPTH:
            raise self.fail(node, f"nested more than {MAX_DEPTH} levels deep")
        if node.tag not in _ALLOWED_TAGS:
            tag = node.tag.replace(_PLAIN, "!!")
            raise self.fail(node, f"tag {tag} is not allowed", hint="use plain strings, numbers, lists and mappings")
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for k, v in node.value:
                if not isinstance(k, yaml.ScalarNode):
                    raise self.fail(k, "a mapping or list used as a key", hint="keys are plain names")
                self.scalar(k)  # refuses a tag that safe loading would not construct
                key = str(k.value)  # as written: `on:` is the key "on", not YAML 1.1's True
                if key in out:
                    raise self.fail(k, f"key {key!r} appears twice")
                child = f"{path}.{key}"
                self.lines[child] = k.start_mark.line + 1
                out[key] = self.build(v, child, depth + 1)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node.value)]
        return self.scalar(node)

    def scalar(self, node: yaml.Node) -> Any:
        if node.tag == f"{_PLAIN}timestamp":
            return str(node.value)
        if node.tag not in _ALLOWED_TAGS:
            raise self.fail(node, f"tag {node.tag.replace(_PLAIN, '!!')} is not allowed")
        try:
            return self.scalars.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError) as err:
            raise self.fail(node, f"{node.value[:40]!r} is not a valid value ({err})") from err


def _error_line(err: yaml.YAMLError, text: str) -> int:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    if mark is not None:
        return int(mark.line) + 1
    pos = getattr(err, "position", None)  # ReaderError: a character YAML does not allow
    return text.count("\n", 0, pos) + 1 if isinstance(pos, int) else 1


def _error_hint(text: str, line: int) -> str:
    """What usually causes a YAML error on this line."""
    lines = text.splitlines()
    here = lines[line - 1] if 0 < line <= len(lines) else ""
    if "\t" in here[: len(here) - len(here.lstrip())] or (line > 1 and "\t" in lines[line - 2][:1]):
        return "YAML does not allow tabs for indentation: indent with spaces"
    return "check the indentation and the quoting on that line (a value with ': ' or '#' needs quotes)"


def _error_text(err: yaml.YAMLError) -> str:
    if isinstance(err, yaml.reader.ReaderError):
        return f"character #x{err.character:04x} is not allowed in YAML" if isinstance(err.character, int) else str(err)
    problem = getattr(err, "problem", None)
    return str(problem) if problem else str(err).splitlines()[0]


def _mark_line(ev: yaml.Event) -> int:
    return ev.start_mark.line + 1 if ev.start_mark is not None else 1


def _precheck(text: str, origin: str, exc: type[YamlError]) -> None:
    """Depth, alias and value counts from the event stream (no recursion), while parsing: a file of
    too many values is refused at the value past the limit, before the rest is parsed or anything is
    built (issue 24: 150,000 steps were parsed in full, 25 s and 863 MB, before being refused)."""
    depth = aliases = values = 0
    for ev in yaml.parse(text, Loader=_Loader):
        if isinstance(ev, (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            values += 1
            if values > MAX_NODES:
                raise exc(
                    f"{origin}:{_mark_line(ev)}: more than {MAX_NODES:,} values (keys, items and mappings); "
                    "larger than any hand-written file",
                    hint="split the file, or give many unit durations as a CSV file (work: durations_csv: FILE)",
                )
        if isinstance(ev, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise exc(f"{origin}:{_mark_line(ev)}: nested more than {MAX_DEPTH} levels deep")
        elif isinstance(ev, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
        elif isinstance(ev, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise exc(f"{origin}:{_mark_line(ev)}: more than {MAX_ALIASES} aliases (`*name`)")


def load_yaml(text: str, origin: str, what: str, exc: type[YamlError] = YamlError) -> YamlDoc:
    """Parse YAML (safe loader) keeping each key's line; ``what`` names the file kind in errors."""
    if len(text) > MAX_YAML_BYTES:
        raise exc(f"{origin}: {len(text)} characters is larger than any {what} ({MAX_YAML_BYTES} max)")
    _wrong_kind(text, origin, what, exc)
    text = text.lstrip("\ufeff")
    try:
        _precheck(text, origin, exc)
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as err:
        line = _error_line(err, text)
        raise exc(f"{origin}:{line}: not valid YAML ({_error_text(err)})", hint=_error_hint(text, line)) from err
    except RecursionError as err:  # the precheck bounds depth; kept as a last guard
        raise exc(f"{origin}: nested too deeply") from err
    if node is None:
        raise exc(f"{origin}:1: empty {what}")
    b = _Builder(origin, exc)
    data = b.build(node, "$")
    return YamlDoc(origin=origin, data=data, lines=b.lines)


def _wrong_kind(text: str, origin: str, what: str, exc: type[YamlError]) -> None:
    """A topology paste or a snapshot where a YAML file was expected: say so, not a YAML error."""
    found = describe(text)
    if found is not None:
        where = (
            "a run record is read by `show`, `diff` and `plan --observed`"
            if "run record" in found
            else "give topologies and snapshots with --probe"
        )
        raise exc(f"{origin}: this is {found}, not a {what}", hint=f"the {what} comes first; {where}")


def read_yaml(path: str | Path, what: str, exc: type[YamlError] = YamlError) -> YamlDoc:
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
    explain: Callable[[str, str], str | None] | None = None,
) -> Any:
    """msgspec.convert with errors as `file:line: message (at path)`; ``known(path)`` lists the
    keys allowed at a path, for the "did you mean" hint; ``explain(path, message)``, when it answers,
    words a wrong kind of value (``Expected `int`, got `str```) as `file:line: its own message`."""
    try:
        return msgspec.convert(value, typ)
    except msgspec.ValidationError as err:
        msg = str(err)
        m = re.search(r" - at `\$([^`]*)`$", msg)
        at = where + (m.group(1) if m else "")
        msg = re.sub(r" - at `\$[^`]*`$", "", msg)
        line = doc.line(at)
        said = explain(at, msg) if explain is not None and msg.startswith("Expected `") else None
        if said is not None:
            raise exc(f"{doc.origin}:{line}: {said}") from err
        hint = None
        u = re.match(r"Object contains unknown field `([^`]+)`", msg)
        if u:
            line = doc.line(f"{at}.{u.group(1)}")
            keys = known(at)
            close = difflib.get_close_matches(u.group(1), keys, n=1)
            hint = f"did you mean `{close[0]}`?" if close else f"known keys: {', '.join(keys)}"
        e = re.match(r"Invalid enum value (.+)$", msg)
        choices = _choices(typ, m.group(1) if m else "") if e else None
        if e and choices:
            msg = f"{msg}; expected one of {', '.join(choices)}"
            close = difflib.get_close_matches(e.group(1).strip("'\""), choices, n=1, cutoff=0.5)
            hint = f"did you mean `{close[0]}`?" if close else f"expected one of: {', '.join(choices)}"
        if hint is None and re.match(r"Expected `str(?: \| null)?`, got `(?:float|int)`", msg):
            hint = "YAML read this value as a number: quote it (e.g. '2.21')"
        for old, new in (renames or {}).items():
            msg = msg.replace(f"`{old}`", f"`{new}`")
        place = at.replace("$.", "").replace("$", "") or "top level"
        raise exc(f"{doc.origin}:{line}: {msg} (at {place})", hint=hint) from err


def _choices(typ: type[Any], subpath: str) -> list[str] | None:
    """The allowed values of the enum field at a msgspec error path (``.steps[...].kind``)."""
    info: Any = msgspec.inspect.type_info(typ)
    for seg in re.findall(r"\.[^.\[]+|\[[^\]]*\]", subpath):
        info = _unwrap(info)
        if seg.startswith("."):
            if not isinstance(info, msgspec.inspect.StructType):
                return None
            info = next((f.type for f in info.fields if f.encode_name == seg[1:]), None)
        elif seg == "[...]" and isinstance(info, msgspec.inspect.DictType):
            info = info.value_type
        elif isinstance(info, (msgspec.inspect.ListType, msgspec.inspect.SetType, msgspec.inspect.VarTupleType)):
            info = info.item_type
        else:
            return None
        if info is None:
            return None
    info = _unwrap(info)
    if isinstance(info, msgspec.inspect.LiteralType):
        return [str(v) for v in info.values]
    if isinstance(info, msgspec.inspect.EnumType):
        return [str(v.value) for v in info.cls]
    return None


def _unwrap(info: Any) -> Any:
    """Optional[X] → X (the non-None member of a two-member union)."""
    if isinstance(info, msgspec.inspect.UnionType):
        rest = [t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)]
        if len(rest) == 1:
            return rest[0]
    return info

"""A declared lot's mistakes (issue 31's follow-up): an ambiguous price is refused, not guessed; an unknown
GPU model gets a "did you mean"; a memory per GPU that is not the model's is refused; and a value of the
wrong kind (a list, a mapping, nothing) is said in words. Each is one line naming the file, line and
field, exit 2, never a traceback and never a Python repr."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from topomap.base.part_names import model_from_name, nearest_models
from topomap.base.units import parse_size
from topomap.cli import app
from topomap.model.lots import LotError, read_lot

GPUS = "gpus: {model: H100 SXM 80GB, count: 8}"
PRICE_HINT = (
    '(hint: write amount, currency and what it is per: "2.49 USD per GPU-hour", "19.92 USD per host-hour" '
    'or "39.84 USD per lot-hour" ($2.49/GPU-hour and instance-hour are read too))'
)


def _show(tmp_path: Path, text: str) -> tuple[int, str, str, Path]:
    """`topomap show` of a lot file holding ``text``: exit status, stdout, stderr, the file."""
    lot = tmp_path / "lot.yaml"
    lot.write_text(text)
    res = CliRunner().invoke(app, ["show", str(lot)], env={"COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"})
    return res.exit_code, res.stdout, res.stderr, lot


def _refused(tmp_path: Path, text: str) -> tuple[str, Path]:
    """The one error line (less ``topomap: error: ``) a lot file holding ``text`` is refused with."""
    code, out, err, lot = _show(tmp_path, text)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("topomap: error: ")
    return err.removeprefix("topomap: error: ").rstrip("\n"), lot


# --- 1. an ambiguous price ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("price", "problem"),
    [
        ("2.49", "price 2.49: without its currency or what it is per"),
        ("2.49 USD", "price '2.49 USD': without what it is per"),
        ("20 USD per hour", "price '20 USD per hour': per hour of what: one GPU, one host or the whole lot?"),
        ("$20/hr", "price '$20/hr': per hour of what: one GPU, one host or the whole lot?"),
        ("2.49 per GPU-hour", "price '2.49 per GPU-hour': without its currency"),
    ],
)
def test_an_ambiguous_price_is_refused_naming_the_field_and_the_spellings_read(
    tmp_path: Path, price: str, problem: str
) -> None:
    line, lot = _refused(tmp_path, f"lot: x\n{GPUS}\nprice: {price}\n")
    assert line == f"{lot}:3: {problem} {PRICE_HINT}"


@pytest.mark.parametrize(
    ("price", "per"),
    [
        ("2.49 USD per GPU-hour", "gpu-hour"),
        ("19.92 USD per host-hour", "host-hour"),
        ("39.84 USD per lot-hour", "lot-hour"),
    ],
)
def test_each_spelling_the_price_error_names_is_read(price: str, per: str) -> None:
    snap = read_lot(f"lot: x\n{GPUS}\nprice: {price}\n", "lot.yaml")
    assert snap.lot is not None and snap.lot.price is not None and snap.lot.price.per == per


# --- 2. an unknown GPU model -------------------------------------------------------------------------


def test_nearest_models_are_known_spellings_closest_first() -> None:
    near = nearest_models("H100 SMX")
    assert near[0] == "H100 SXM" and len(near) == 3
    assert all(model_from_name(n) is not None for n in near)  # each names one part
    assert nearest_models("L40s pcie")[0] == "NVIDIA L40S"
    assert nearest_models("zzz") == []
    assert nearest_models("H100" + "x" * 100_000) == []  # no spelling is that long (difflib is quadratic)


def test_a_long_unknown_model_is_shown_cut_short(tmp_path: Path) -> None:
    line, lot = _refused(tmp_path, f"lot: x\ngpus: {{model: H100{'x' * 5000}, count: 8}}\n")
    assert line.startswith(f"{lot}:2: unknown GPU model 'H100{'x' * 73}…' in gpus.model") and len(line) < 400


def test_an_unknown_gpu_model_says_did_you_mean(tmp_path: Path) -> None:
    line, lot = _refused(tmp_path, "lot: x\ngpus: {model: H100 SMX, count: 8}\n")
    assert line == (
        f"{lot}:2: unknown GPU model 'H100 SMX' in gpus.model "
        "(did you mean H100 SXM, NVIDIA H100 NVL, NVIDIA H100 PCIe?)"
    )
    line, lot = _refused(tmp_path, "lot: x\ngpus: {model: Zorp 9, count: 8}\n")
    assert line == (
        f"{lot}:2: unknown GPU model 'Zorp 9' in gpus.model "
        "(hint: e.g. H100 SXM 80GB, H200 SXM 141GB, B200 180GB (topomap knows NVIDIA and AMD parts))"
    )


# --- 3. a memory that is not the model's -------------------------------------------------------------


def test_a_memory_that_contradicts_the_model_is_refused(tmp_path: Path) -> None:
    line, lot = _refused(tmp_path, "lot: x\ngpus: {model: H100 SXM 80GB, count: 8, memory: 40 GB}\n")
    assert line == (
        f"{lot}:2: gpus.memory '40 GB': the NVIDIA H100 80GB HBM3 has 80 GB per GPU "
        "(hint: write 80 GB, or leave memory out)"
    )
    line, lot = _refused(tmp_path, "lot: x\ngpus: {model: A100 SXM4 40GB, count: 8, memory: 80 GB}\n")
    assert line.startswith(f"{lot}:2: gpus.memory '80 GB': the NVIDIA A100-SXM4-40GB has 40 GB per GPU")


@pytest.mark.parametrize(
    ("model", "memory"),
    [
        ("H100 SXM 80GB", "80 GB"),
        ("H100 SXM 80GB", "80 GiB"),
        ("H100 SXM 80GB", "81559 MiB"),  # as nvidia-smi prints it
        ("H200 SXM 141GB", "141 GB"),
        ("H200 SXM 141GB", "143771 MiB"),
        ("A100 SXM4 40GB", "40960 MiB"),
        ("B200", "180 GB"),
        ("B200", "192 GB"),
        ("B200", "183359 MiB"),
        ("GB200", "192 GiB"),  # Azure's ND GB200 v6 page
        ("L40S", "46068 MiB"),
    ],
)
def test_spellings_of_the_models_own_memory_are_taken(model: str, memory: str) -> None:
    snap = read_lot(f"lot: x\ngpus: {{model: {model}, count: 2, memory: {memory}}}\n", "lot.yaml")
    assert [g.memory_total_bytes for g in snap.gpus] == [int(parse_size(memory) or 0)] * 2


def test_a_model_over_a_catalogue_entry_whose_memory_it_contradicts_is_refused_on_the_model(tmp_path: Path) -> None:
    line, lot = _refused(tmp_path, "lot: x\ntype: aws/p4de.24xlarge\ngpus: {model: A100 SXM4 40GB}\n")
    assert line == (
        f"{lot}:3: gpus.model 'A100 SXM4 40GB': the NVIDIA A100-SXM4-40GB has 40 GB per GPU, not the '80 GB' "
        "of the catalogue entry aws/p4de.24xlarge (hint: give gpus.memory too)"
    )
    snap = read_lot("lot: x\ntype: aws/p4de.24xlarge\ngpus: {model: A100 SXM4 40GB, memory: 40 GB}\n", "l.yaml")
    assert snap.gpus[0].memory_total_bytes == 40 * 10**9


# --- 4. a value of the wrong kind, in words ----------------------------------------------------------

NOTHING = "(hint: write its value, or leave the key out (what a lot does not say is unknown))"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("gpus: [8]", 2, "gpus: a list given; write a mapping of model:, count: and memory:"),
        (f"{GPUS}\nnics: 8", 3, "nics: 8 given; write a mapping of count:, rate: and fabric:"),
        (f"hosts: two\n{GPUS}", 2, "hosts: 'two' given; write a whole number"),
        (f"{GPUS}\nperiods: 3 d", 3, "periods: '3 d' given; write a list of rental periods such as 3 d, 7 d, 30 d"),
        (f"{GPUS}\nprice: {{usd: 2}}", 3, "price: a mapping given; write a price such as 2.49 USD per GPU-hour"),
        (f"{GPUS}\nprice:", 3, f"price: nothing given {NOTHING}"),
        (f"{GPUS}\nhosts: null", 3, f"hosts: nothing given {NOTHING}"),
        ("gpus:", 2, f"gpus: nothing given {NOTHING}"),
        ("gpus: {model: , count: 8}", 2, f"gpus.model: nothing given {NOTHING}"),
        ("gpus: {model: [H100], count: 8}", 2, "gpus.model: a list given; write a GPU model such as H100 SXM 80GB"),
        ("gpus: {model: H100 SXM 80GB, count: [8]}", 2, "gpus.count: a list given; write a whole number"),
        ("gpus: {model: H100 SXM 80GB, count: {n: 8}}", 2, "gpus.count: a mapping given; write a whole number"),
        ("gpus: {model: H100 SXM 80GB, count: 8, memory: [80 GB]}", 2, "gpus.memory: a list given; write a size"),
        (f"{GPUS}\nperiods: [3 d, [7 d]]", 3, "periods item 2: a list given; write a rental period such as 7 d"),
        (f"{GPUS}\nperiods: [3 d, null]", 3, f"periods item 2: nothing given {NOTHING}"),
        (f"{GPUS}\nperiods: [3 d, 1 month]", 3, "periods item 2 '1 month': not a rental period"),
        (f"{GPUS}\ngpu_links: [nvswitch]", 3, "gpu_links: a list given; write nvswitch, NV<k>, xgmi or none"),
        (f"{GPUS}\ngpu_links: {{a: 1}}", 3, "gpu_links: a mapping given; write nvswitch, NV<k>, xgmi or none"),
        (f"{GPUS}\nnics: {{count: 8, rate: [400G]}}", 3, "nics.rate: a list given; write a rate such as 400 Gb/s"),
        (f"{GPUS}\nnics: {{count: 8, fabric: [ib]}}", 3, "nics.fabric: a list given; write a fabric such as"),
        (f"{GPUS}\ncpu: {{vendor: {{a: 1}}}}", 3, "cpu.vendor: a mapping given; write a CPU vendor such as intel"),
        (f"{GPUS}\ngpudirect: maybe", 3, "gpudirect: 'maybe' given; write true or false"),
        (f"{GPUS}\nhost_memory: [1]", 3, "host_memory: a list given; write a size such as 2 TB"),
        (f"{GPUS}\npcie: {{gen: [5]}}", 3, "pcie.gen: a list given; write a PCIe generation from 1 to 6"),
        (f"{GPUS}\ntype: [aws]", 3, "type: a list given; write a catalogue entry such as aws/p5.48xlarge"),
        (f"{GPUS}\nsources: [1]", 3, "sources: a list given; write a mapping of fact keys to their pages"),
        (f"{GPUS}\nvcpus: 1.5", 3, "vcpus: 1.5 given; write a whole number"),
    ],
)
def test_a_value_of_the_wrong_kind_is_said_in_words(tmp_path: Path, text: str, line: int, message: str) -> None:
    said, lot = _refused(tmp_path, f"lot: x\n{text}\n")
    assert said.startswith(f"{lot}:{line}: {message}"), said
    body = said.split(" (hint: ")[0]  # the message; a hint may show YAML such as {model: …}
    assert not any(s in body for s in ("[", "{", "None", "Traceback", "Expected `", "got `")), body
    assert not any(s in said for s in ("None", "['", "{'", "[8]")), said


@pytest.mark.parametrize("first", ["lot: [a]", "lot: {a: 1}", "lot:"])
def test_the_lot_key_itself_of_the_wrong_kind(tmp_path: Path, first: str) -> None:
    said, lot = _refused(tmp_path, f"{first}\n{GPUS}\n")
    assert said.startswith(f"{lot}:1: lot: ") and "None" not in said and "[" not in said.split(" (hint: ")[0]


def test_read_lot_raises_the_same_line() -> None:
    with pytest.raises(LotError) as err:
        read_lot(f"lot: x\n{GPUS}\nnics: [8]\n", "t.yaml")
    assert str(err.value) == "t.yaml:3: nics: a list given; write a mapping of count:, rate: and fabric:"

"""A note is a kind and its subjects, its words made once (topomap.base.notes): a reason is made a
Note where it is made, longer notes are made of reasons by ``cat``, and ``only`` keeps the slots a view
groups by. Nothing turns finished words back into a template (issue 33 item 1)."""

from __future__ import annotations

import copy
import pickle

from topomap.base.notes import Note, cat, said


def test_cat_keeps_each_pieces_slots_and_says_plain_text_as_it_is() -> None:
    reason = Note("NIC {nic} is PIX to {gpu}", nic="mlx5_3", gpu="gpu1")
    note = cat(Note("{host}: ", "node-a"), reason, "; a {plain} piece")
    assert note == "node-a: NIC mlx5_3 is PIX to gpu1; a {plain} piece"
    assert note.template == "{host}: NIC {nic} is PIX to {gpu}; a {{plain}} piece"
    assert note.subjects == (("nic", "mlx5_3"), ("gpu", "gpu1")) and note.host == "node-a"


def test_a_slot_held_with_another_device_is_written_as_words() -> None:
    note = cat(Note("{nic} first", nic="mlx5_0"), ", then ", Note("{nic} second", nic="mlx5_1"))
    assert note == "mlx5_0 first, then mlx5_1 second"
    assert note.template == "{nic} first, then mlx5_1 second" and note.subjects == (("nic", "mlx5_0"),)


def test_only_keeps_the_slots_asked_for_in_that_order() -> None:
    note = Note("{host}: {gpu} sends through {nic} ({{x}})", "node-b", gpu="gpu2", nic="mlx5_2")
    kept = note.only(nic="mlx5_2", gpu="gpu2")
    assert kept == note and kept.subjects == (("nic", "mlx5_2"), ("gpu", "gpu2"))
    gpu_only = note.only(gpu="gpu2")
    assert gpu_only.template == "{host}: {gpu} sends through mlx5_2 ({{x}})" and gpu_only == note
    other = note.only(gpu="gpu7", nic=None)  # a slot holding another device is words too
    assert other.template == "{host}: gpu2 sends through mlx5_2 ({{x}})" and other.subjects == ()


def test_a_note_survives_copy_and_pickle_and_said_escapes_braces() -> None:
    note = Note("{gpu}: " + said("cores {unknown}"), gpu="gpu0")
    assert note == "gpu0: cores {unknown}"
    for again in (copy.deepcopy(note), pickle.loads(pickle.dumps(note))):
        assert (again.template, again.subjects, again.host) == (note.template, note.subjects, note.host)

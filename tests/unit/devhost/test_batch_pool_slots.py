"""The Batch test service's sized pools give task slots as Batch does: priority first, then first come."""

from __future__ import annotations

from hastegeo_dev.testing.batch_service.slots import PoolSlots


def test_a_sized_pool_starts_tasks_in_turn_and_wakes_the_next_when_a_slot_frees() -> None:
    slots = PoolSlots()
    slots.sizes["p"] = 1
    first, _ = slots.join("p", 0)
    second, second_turn = slots.join("p", 0)
    urgent, urgent_turn = slots.join("p", 10)  # a job of higher priority goes first
    assert not slots.take("p", first)
    assert slots.take("p", urgent)
    assert not slots.take("p", first)  # the one slot is taken
    slots.leave("p", urgent, held=True)
    assert not urgent_turn.is_set()
    assert slots.take("p", first)
    slots.leave("p", first, held=True)
    assert second_turn.is_set()  # woken: first in line with a slot free
    assert slots.take("p", second)


def test_a_task_that_gives_up_waiting_leaves_its_place_to_the_next() -> None:
    slots = PoolSlots()
    slots.sizes["p"] = 1
    running, _ = slots.join("p", 0)
    assert slots.take("p", running)
    gone, _ = slots.join("p", 0)
    waiting, turn = slots.join("p", 0)
    slots.leave("p", gone, held=False)
    slots.leave("p", running, held=True)
    assert turn.is_set()
    assert slots.take("p", waiting)

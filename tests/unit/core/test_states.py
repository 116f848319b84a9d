"""The state machine, exhaustively: every (current, target) pair is either allowed or refused."""

from __future__ import annotations

import itertools

import pytest

from hastegeo.models.states import ALLOWED, TERMINAL_STATES, JobState, transition
from hastegeo.utils.errors import IllegalTransitionError

EXPECTED = {
    ("queued", "submitting"), ("queued", "cancelled"), ("queued", "failed"),
    ("submitting", "running"), ("submitting", "cancel_requested"), ("submitting", "failed"),
    ("running", "postprocessing"), ("running", "cancel_requested"), ("running", "failed"), ("running", "cancelled"),
    ("running", "queued"),  # moved to another backend: its compute did not come (pipeline/failover.py)
    ("cancel_requested", "cancelled"), ("cancel_requested", "failed"), ("cancel_requested", "postprocessing"),
    ("postprocessing", "succeeded"), ("postprocessing", "failed"),
}  # fmt: skip


@pytest.mark.parametrize(("current", "target"), list(itertools.product(JobState, JobState)))
def test_every_pair(current: JobState, target: JobState) -> None:
    if (current.value, target.value) in EXPECTED:
        assert transition(current, target) is target
    else:
        with pytest.raises(IllegalTransitionError) as caught:
            transition(current, target)
        assert current.value in str(caught.value)
        assert target.value in str(caught.value)


def test_terminal_states_have_no_exit() -> None:
    for state in TERMINAL_STATES:
        assert ALLOWED[state] == frozenset()
        assert state.terminal


def test_only_the_terminal_states_say_so() -> None:
    """``terminal`` is a plain bool: a state that is not terminal answers False, not something truthy."""
    assert {state: state.terminal for state in JobState} == {state: state in TERMINAL_STATES for state in JobState}


def test_cancelled_is_never_reached_through_success() -> None:
    assert JobState.SUCCEEDED not in ALLOWED[JobState.CANCEL_REQUESTED]


def test_every_state_is_reachable_from_queued() -> None:
    seen, frontier = {JobState.QUEUED}, [JobState.QUEUED]
    while frontier:
        for nxt in ALLOWED[frontier.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    assert seen == set(JobState)

"""Queue messages across a deployment: the renamed poll sequence is read and written in both spellings."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from hastegeo.store.queues import JobMessage


def test_a_message_from_the_previous_release_keeps_its_sequence() -> None:
    old = '{"jobId":"0190abc","kind":"poll","attempt":7}'
    assert JobMessage.model_validate_json(old) == JobMessage(job_id="0190abc", kind="poll", poll_seq=7)


def test_a_message_names_its_sequence_and_still_carries_the_old_key() -> None:
    wire = json.loads(JobMessage(job_id="0190abc", kind="poll", poll_seq=3).encode())
    assert wire == {"jobId": "0190abc", "kind": "poll", "pollSeq": 3, "attempt": 3}
    assert JobMessage.model_validate_json(json.dumps({"jobId": "0190abc", "kind": "poll", "pollSeq": 3})).poll_seq == 3


def test_an_encoded_message_decodes_to_itself() -> None:
    for message in (
        JobMessage(job_id="j1", kind="submit"),
        JobMessage(job_id="j1", kind="nudge"),
        JobMessage(job_id="j-2", kind="poll", poll_seq=41),
    ):
        assert JobMessage.model_validate_json(message.encode()) == message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"jobId": "J1", "kind": "poll"}, "jobId"),
        ({"jobId": "j1\n", "kind": "poll"}, "jobId"),
        ({"jobId": "j1", "kind": "poll", "pollSeq": -1}, "pollSeq"),
        ({"jobId": "j1", "kind": "poll", "attempt": -1}, "attempt"),
    ],
)
def test_a_bad_message_names_the_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        JobMessage.model_validate_json(json.dumps(body))
    assert [error["loc"][0] for error in caught.value.errors()] == [field]

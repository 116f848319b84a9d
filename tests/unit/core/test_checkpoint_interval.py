"""The seconds between a running job's checkpoint copies: refused when set too short, and said when it is not usable."""

from __future__ import annotations

import pytest

from hastegeo.checkpoints import layout
from hastegeo.checkpoints.agent import _interval
from hastegeo.settings.load import load_settings
from hastegeo.utils.errors import ConfigurationError

BASE = {"AzureWebJobsStorage": "UseDevelopmentStorage=true"}


def test_the_app_setting_refuses_an_interval_the_agent_could_not_keep() -> None:
    with pytest.raises(ConfigurationError, match=layout.INTERVAL_VARIABLE):
        load_settings({**BASE, layout.INTERVAL_VARIABLE: "0.01"})
    assert load_settings({**BASE, layout.INTERVAL_VARIABLE: "0.05"}).pipeline.checkpoint_interval_s == 0.05


@pytest.mark.parametrize(
    ("raw", "interval", "said"),
    [
        (None, layout.DEFAULT_INTERVAL_S, ""),
        ("", layout.DEFAULT_INTERVAL_S, ""),
        ("45.0", 45.0, ""),
        ("0.001", layout.MIN_INTERVAL_S, "is shorter than 0.05s: copying every 0.05s"),
        ("nan", layout.MIN_INTERVAL_S, "is shorter than 0.05s"),
        ("-3", layout.MIN_INTERVAL_S, "is shorter than 0.05s"),
        ("five", layout.DEFAULT_INTERVAL_S, "'five' is not a number of seconds: copying every 300s"),
    ],
)
def test_the_agent_reads_what_the_job_was_given_and_says_what_it_could_not_use(
    raw: str | None, interval: float, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {} if raw is None else {layout.INTERVAL_VARIABLE: raw}
    assert _interval(env) == interval
    err = capsys.readouterr().err
    assert (said in err) if said else err == ""

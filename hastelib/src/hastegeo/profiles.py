"""Compute profiles: named choices of what a job runs on, declared by the operator per backend (ADR 0043). Pure.

A backend's section declares its profiles in one JSON-valued variable
(``BATCH_PROFILES``, ``AML_PROFILES``, ``HASTE_LOCAL_PROFILES``): a name, what
the profile runs on (the backend's own fields: a pool, a compute with an
instance type), its tier (``dedicated`` or ``spot``), its longest run time and
the workloads that may use it. Every backend also offers the implicit profile
``default`` to every workload it can run: what the workload ran on before
profiles (``BATCH_POOLS``, ``AML_COMPUTE``, a local slot), with the workload's
own time limit. A job that names no profile runs on ``default``.

:class:`Profile` is the backend-neutral view the router, the API, the pipeline
and ``GET /api/backends`` read; each backend's declaration model
(:class:`ProfileDeclaration` subclasses) says what it runs on.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

DEFAULT_PROFILE = "default"
NAME_BODY = r"[a-z][a-z0-9-]{0,39}"
NAME = re.compile(NAME_BODY)  # fullmatch only
NAME_PATTERN = f"^{NAME_BODY}$"  # pydantic ``pattern=`` and JSON Schema only (there ``$`` ends the text)
NAME_RULE = "1-40 lowercase letters, digits and '-', starting with a letter"
# How often a spot task may be run again after it ended early (its node was taken back); dedicated: never.
SPOT_RERUNS = 2
# Time after a run's limit for its outputs to be uploaded and its end to be seen (s).
FINISH_GRACE_S = 600


class Tier(enum.StrEnum):
    DEDICATED = "dedicated"
    SPOT = "spot"


@dataclass(frozen=True)
class Profile:
    """A profile as the router, the API and the pipeline see it, on one backend.

    ``max_run_s`` None: the workload's own time limit (the implicit ``default``).
    ``runs_on``: one readable line (``pool gpu-t4-spot``).
    """

    name: str
    tier: Tier
    workloads: frozenset[str]
    runs_on: str
    max_run_s: int | None = None
    description: str = ""

    @property
    def runs(self) -> int:
        """How many times the provider may start the job: once, or more on spot capacity (requeued runs)."""
        return 1 + (SPOT_RERUNS if self.tier is Tier.SPOT else 0)

    def time_limit_s(self, workload_limit_s: int) -> int:
        """The time limit of one run: the profile's longest run time, else the workload's own."""
        return self.max_run_s if self.max_run_s is not None else workload_limit_s

    def run_deadline_s(self, queue_limit_s: int, default_deadline_s: int) -> int:
        """How long after its submission the pipeline gives up on the job (s).

        The implicit ``default`` keeps ``HASTE_RUN_DEADLINE_S``. A declared profile bounds it
        by its own run time instead: the wait for a node, each run the tier allows, and a grace
        for the outputs, so a long profile is not cut by the global deadline and a short one
        does not hang on to a job that can no longer finish.
        """
        if self.max_run_s is None:
            return default_deadline_s
        return queue_limit_s + self.runs * self.max_run_s + FINISH_GRACE_S

    def api_view(self) -> dict[str, Any]:
        """The JSON ``GET /api/backends`` shows."""
        return {
            "name": self.name,
            "tier": self.tier.value,
            "maxRunS": self.max_run_s,
            "runsOn": self.runs_on,
            "workloads": sorted(self.workloads),
            "description": self.description,
        }


class ProfileDeclaration(BaseModel):
    """What every backend's profile declares; a backend's subclass adds what it runs on."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, alias_generator=to_camel)

    tier: Tier = Field(Tier.DEDICATED, description="dedicated or spot (capacity that may be taken back).")
    max_run_s: int = Field(gt=0, le=30 * 86400, description="The longest one run of a job may take (s).")
    workloads: tuple[str, ...] = Field(min_length=1, description="The workloads that may use the profile.")
    description: str = Field("", max_length=200, description="One line for the people who choose it.")

    @field_validator("workloads")
    @classmethod
    def _known_workloads(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from hastegeo.workloads.registry import workload_names

        unknown = sorted(set(value) - set(workload_names()))
        if unknown:
            raise ValueError(f"unknown workload(s) {unknown}; choose from {list(workload_names())}")
        return tuple(dict.fromkeys(value))

    def runs_on(self) -> str:
        """One readable line: what the profile runs on (overridden by each backend)."""
        return "the backend's compute"

    def view(self, name: str, able: Iterable[str]) -> Profile:
        """The neutral view, limited to the workloads in ``able`` (those the backend can run at all)."""
        return Profile(
            name=name,
            tier=self.tier,
            workloads=frozenset(self.workloads) & frozenset(able),
            runs_on=self.runs_on(),
            max_run_s=self.max_run_s,
            description=self.description,
        )


def parse_profiles(value: Any) -> Any:
    """A JSON object from the variable's text (an empty text: no profile); the names are checked here."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc.msg} at character {exc.pos}); expected an object of profiles") from None
    if not isinstance(value, Mapping):
        raise ValueError('expected a JSON object of profiles by name, e.g. {"cpu-small": {...}}')
    for name in value:
        if name == DEFAULT_PROFILE:
            raise ValueError(f"{name!r} is the implicit profile of every workload and cannot be declared")
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ValueError(f"profile name {name!r}: {NAME_RULE}")
    return value


def profiles_field(alias: str, example: str) -> Any:
    """The setting ``alias``: the backend's declared profiles as one JSON object (``example`` shows one)."""
    return Field(
        {},
        alias=alias,
        description="Compute profiles as a JSON object by name (ADR 0043), e.g. " + example + "; every workload "
        "also has the implicit profile 'default'.",
    )


def offered(
    declared: Mapping[str, ProfileDeclaration], able: Iterable[str], default_runs_on: str
) -> dict[str, Profile]:
    """Every profile a backend offers: ``default`` for the workloads it can run (``able``), then those declared."""
    able = frozenset(able)
    found = {DEFAULT_PROFILE: Profile(DEFAULT_PROFILE, Tier.DEDICATED, able, default_runs_on)}
    found.update((name, declaration.view(name, able)) for name, declaration in declared.items())
    return found


def allowed(profiles: Mapping[str, Profile], workload: str) -> list[str]:
    """The names of the profiles ``workload`` may use, ``default`` first, then by name."""
    names = sorted(name for name, profile in profiles.items() if workload in profile.workloads)
    return sorted(names, key=lambda name: name != DEFAULT_PROFILE)

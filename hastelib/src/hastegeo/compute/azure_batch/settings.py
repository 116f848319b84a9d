"""Settings of the Azure Batch backend (environment variables BATCH_*, and HASTE_AZURE_BATCH_QUEUE_LIMIT_S)."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, model_validator

from hastegeo.profiles import DEFAULT_PROFILE, ProfileDeclaration, Tier, parse_profiles, profiles_field
from hastegeo.settings.fields import BackendSection, CsvMap, poll_max_field, queue_limit_field, workload_limits

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class AuthMode(enum.StrEnum):
    MANAGED_IDENTITY = "managed_identity"
    DEFAULT = "default"
    SHARED_KEY = "shared_key"


class BatchProfile(ProfileDeclaration):
    """A Batch profile runs on one pool; a spot profile's pool has spot (low-priority) nodes."""

    pool: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="The Batch pool id its jobs run on.")

    def runs_on(self) -> str:
        return f"pool {self.pool}"


class BatchSettings(BackendSection):
    account_url: str = Field("", alias="BATCH_ACCOUNT_URL", description="Batch account endpoint URL.")
    auth_mode: AuthMode = Field(
        AuthMode.MANAGED_IDENTITY,
        alias="BATCH_AUTH_MODE",
        description="managed_identity, default (DefaultAzureCredential) or shared_key (tests only).",
    )
    account_name: str = Field("", alias="BATCH_ACCOUNT_NAME", description="Account name (shared_key mode).")
    account_key: str = Field("", alias="BATCH_ACCOUNT_KEY", description="Account key (shared_key mode; tests only).")
    client_id: str = Field(
        "",
        alias="BATCH_CLIENT_ID",
        description="Client id of the user-assigned identity the app uses to call Batch (empty: system-assigned).",
    )
    region: str = Field(
        "",
        alias="BATCH_REGION",
        description="The Batch account's region (armRegionName) its jobs are priced in; empty: read from "
        "BATCH_ACCOUNT_URL (https://<account>.<region>.batch.azure.com).",
    )
    pools: CsvMap = Field({}, alias="BATCH_POOLS", description="Pool id per workload, e.g. imagery=cpu,training=gpu.")
    images: CsvMap = Field({}, alias="BATCH_IMAGES", description="Container image per workload.")
    registry: str = Field("", alias="BATCH_REGISTRY", description="Container registry login server.")
    identity_resource_id: str = Field(
        "", alias="BATCH_IDENTITY_RESOURCE_ID", description="User-assigned identity the pools use for ACR and blobs."
    )
    retention_s: int = Field(86400, alias="BATCH_RETENTION_S", gt=0, description="Task files kept on the node (s).")
    request_timeout_s: float = Field(
        30.0, alias="BATCH_REQUEST_TIMEOUT_S", gt=0, description="Connect and read timeout of one Batch request (s)."
    )
    retry_attempts: int = Field(
        4,
        alias="BATCH_RETRY_ATTEMPTS",
        ge=1,
        le=10,
        description="Attempts per Batch call for transient errors (the adapter is the only retry owner).",
    )
    retry_backoff_s: float = Field(
        1.0, alias="BATCH_RETRY_BACKOFF_S", ge=0, description="First wait between attempts; doubles each time (s)."
    )
    retry_max_wait_s: float = Field(
        20.0,
        alias="BATCH_RETRY_MAX_WAIT_S",
        ge=0,
        description="Longest single wait between attempts, Retry-After included (s).",
    )
    terminate_wait_s: float = Field(
        5.0,
        alias="BATCH_TERMINATE_WAIT_S",
        ge=0,
        description="How long cancel/cleanup wait for a job termination to be confirmed (s).",
    )
    queue_limit_s: int = queue_limit_field(
        "HASTE_AZURE_BATCH_QUEUE_LIMIT_S", 1800, "a Batch node (pool resizes time out at 15 min)"
    )
    poll_max_s: int = poll_max_field("BATCH_POLL_MAX_S", 600, "Azure Batch")
    compute_profiles: Annotated[dict[str, BatchProfile], BeforeValidator(parse_profiles)] = profiles_field(
        "BATCH_PROFILES",
        '{"gpu-t4-spot": {"pool": "gpu-t4-spot", "tier": "spot", "maxRunS": 14400, "workloads": ["training"]}}',
    )

    @model_validator(mode="after")
    def _consistent(self) -> BatchSettings:
        if self.account_url:
            parts = urlsplit(self.account_url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"BATCH_ACCOUNT_URL must be an http(s) URL, got {self.account_url!r}")
            if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
                raise ValueError("BATCH_ACCOUNT_URL must use https (plain http is accepted on loopback only)")
            if parts.scheme == "http" and self.auth_mode is not AuthMode.SHARED_KEY:
                raise ValueError("BATCH_AUTH_MODE must be shared_key for a plain-http BATCH_ACCOUNT_URL")
        if self.auth_mode is AuthMode.SHARED_KEY and not (self.account_name and self.account_key):
            raise ValueError("BATCH_AUTH_MODE=shared_key needs BATCH_ACCOUNT_NAME and BATCH_ACCOUNT_KEY")
        return self

    def enable_problem(self) -> str | None:
        return None if self.account_url else "BATCH_ACCOUNT_URL is empty"

    def queue_limit(self) -> int:
        return self.queue_limit_s

    def poll_max(self) -> float:
        return float(self.poll_max_s)

    def declared_profiles(self) -> Mapping[str, BatchProfile]:
        return self.compute_profiles

    def default_runs_on(self) -> str:
        return "the workload's pool (BATCH_POOLS)"

    def placement(self, workload: str, profile: str | None) -> tuple[str, Tier]:
        """The pool a job of ``workload`` runs on under ``profile`` (None: ``default``) and its tier;
        an empty pool id when the settings name none."""
        if profile is None or profile == DEFAULT_PROFILE:
            return self.pools.get(workload, ""), Tier.DEDICATED
        declared = self.compute_profiles.get(profile)
        return (declared.pool, declared.tier) if declared else ("", Tier.DEDICATED)

    def limits(self, workloads: Iterable[str]) -> dict[str, str]:
        empty = self.empty("account_url", "identity_resource_id")
        whole = f"{' and '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty" if empty else None
        tables = [(self.pools, "BATCH_POOLS names no pool for it"), (self.images, "BATCH_IMAGES names no image for it")]
        return workload_limits(workloads, whole, tables)

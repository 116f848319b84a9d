"""Per-band mean / standard deviation / min / max accumulated block by block.

Blocks are merged with Chan's parallel update (count, mean, M2), which
stays accurate where a running sum of squares would lose precision on large
rasters. Nodata pixels never enter the statistics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt


class BandStats:
    def __init__(self, bands: int) -> None:
        self.count = 0
        self.mean = np.zeros(bands)
        self.m2 = np.zeros(bands)
        self.minimum = np.full(bands, np.inf)
        self.maximum = np.full(bands, -np.inf)

    def add(self, data: npt.NDArray[Any], valid: npt.NDArray[np.bool_]) -> None:
        """Fold in the valid pixels of one block (``data`` is bands x rows x cols)."""
        values = data[:, valid].astype(np.float64)
        n = values.shape[1]
        if n == 0:
            return
        block_mean = values.mean(axis=1)
        block_m2 = ((values - block_mean[:, None]) ** 2).sum(axis=1)
        total = self.count + n
        delta = block_mean - self.mean
        self.mean = self.mean + delta * (n / total)
        self.m2 = self.m2 + block_m2 + delta**2 * (self.count * n / total)
        self.count = total
        self.minimum = np.minimum(self.minimum, values.min(axis=1))
        self.maximum = np.maximum(self.maximum, values.max(axis=1))

    @property
    def std(self) -> npt.NDArray[np.float64]:
        """Population standard deviation (``numpy.std`` with ``ddof=0``)."""
        if self.count == 0:
            return np.full_like(self.mean, np.nan)
        result: npt.NDArray[np.float64] = np.sqrt(self.m2 / self.count)
        return result

    def to_json(self) -> dict[str, Any]:
        def number(value: float) -> float | None:
            return None if not math.isfinite(value) else float(value)

        return {
            "validPixels": self.count,
            "bands": [
                {
                    "band": i + 1,
                    "mean": number(self.mean[i]) if self.count else None,
                    "std": number(self.std[i]),
                    "min": number(self.minimum[i]),
                    "max": number(self.maximum[i]),
                }
                for i in range(len(self.mean))
            ],
        }

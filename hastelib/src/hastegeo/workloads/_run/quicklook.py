"""Small PNG quicklooks a browser shows as they are (the console's mosaic preview and class map).

A COG needs a tile server or a GeoTIFF decoder before a browser can show it; a
PNG of at most :data:`QUICKLOOK_MAX` pixels a side is a plain ``<img>``. The
encoder is the standard library's zlib plus numpy, so no GDAL driver writes
side files (``.aux.xml``) into ``outputs/`` and the bytes depend only on the
pixels (same inputs, same file).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from hastegeo.utils.files import write_bytes

QUICKLOOK_MAX = 512

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOUR_TYPES = {3: 2, 4: 6}  # channels -> PNG colour type (RGB, RGBA)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(pixels: np.ndarray[Any, np.dtype[np.uint8]]) -> bytes:
    """PNG bytes of an 8-bit ``(height, width, 3 or 4)`` array (RGB or RGBA).

    Raises:
        ValueError: the array is not uint8 with 3 or 4 channels, or is empty.
    """
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] not in _COLOUR_TYPES or 0 in pixels.shape:
        raise ValueError(f"expected a non-empty uint8 (height, width, 3|4) array, got {pixels.dtype} {pixels.shape}")
    height, width, channels = pixels.shape
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPES[channels], 0, 0, 0)
    # Filter type 0 (none) on each row: simple, and zlib does well enough on quicklooks this small.
    rows = np.concatenate([np.zeros((height, 1), dtype=np.uint8), pixels.reshape(height, width * channels)], axis=1)
    return (
        _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 9)) + _chunk(b"IEND", b"")
    )


def write_png(path: Path, pixels: np.ndarray[Any, np.dtype[np.uint8]]) -> None:
    """Write :func:`encode_png` of ``pixels`` to ``path`` (temp file + rename, so a reader never sees half)."""
    write_bytes(path, encode_png(pixels))


def quicklook_shape(width: int, height: int, max_size: int = QUICKLOOK_MAX) -> tuple[int, int]:
    """``(width, height)`` scaled so the longest side is at most ``max_size`` (never enlarged, never 0)."""
    scale = min(1.0, max_size / max(width, height))
    return max(1, round(width * scale)), max(1, round(height * scale))


def rgba_from_bands(bands: np.ndarray[Any, np.dtype[np.uint8]], nodata: int = 0) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """``(3, h, w)`` 8-bit bands as ``(h, w, 4)`` RGBA, transparent where every band equals ``nodata``."""
    rgb = np.moveaxis(bands, 0, -1)
    alpha = np.where((bands == nodata).all(axis=0), 0, 255).astype(np.uint8)
    return np.concatenate([rgb, alpha[..., np.newaxis]], axis=-1)


def colourise(
    classes: np.ndarray[Any, np.dtype[np.uint8]], palette: list[tuple[int, int, int]], nodata: int
) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """Class indices ``(h, w)`` as RGBA through ``palette`` (cycled); ``nodata`` is transparent."""
    table = np.zeros((256, 4), dtype=np.uint8)
    for index in range(256):
        table[index] = (*palette[index % len(palette)], 255)
    table[nodata] = (0, 0, 0, 0)
    result: np.ndarray[Any, np.dtype[np.uint8]] = table[classes]
    return result


def shrink(
    pixels: np.ndarray[Any, np.dtype[np.uint8]], max_size: int = QUICKLOOK_MAX
) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """``(h, w, …)`` resampled (nearest) so the longest side is at most ``max_size``: class values stay classes."""
    height, width = pixels.shape[:2]
    new_width, new_height = quicklook_shape(width, height, max_size)
    rows = (np.arange(new_height) * height // new_height).astype(np.intp)
    cols = (np.arange(new_width) * width // new_width).astype(np.intp)
    result: np.ndarray[Any, np.dtype[np.uint8]] = pixels[rows][:, cols]
    return result

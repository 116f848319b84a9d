"""Write Cloud Optimized GeoTIFFs and check that a file really has the COG layout.

Workloads write a plain tiled GeoTIFF block by block into scratch space,
then GDAL's ``COG`` driver copies it into the final layout (tiles,
overviews, IFDs before the image data) with a bounded cache. The checker
reads the TIFF structure itself (standard library ``struct``), so a test can
assert the layout without trusting the writer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import rasterio
import rasterio.shutil

from hastegeo.utils.files import replacing

COG_BLOCK = 256
TILE_OFFSETS_TAG = 324
IMAGE_WIDTH_TAG = 256
NEW_SUBFILE_TYPE_TAG = 254


def scratch_profile(
    width: int, height: int, count: int, dtype: str, crs: Any, transform: Any, nodata: float | None
) -> dict[str, Any]:
    """Profile for the tiled scratch GeoTIFF a workload writes window by window."""
    return {
        "driver": "GTiff",
        "width": width,
        "height": height,
        "count": count,
        "dtype": dtype,
        "crs": crs,
        "transform": transform,
        "nodata": nodata,
        "tiled": True,
        "blockxsize": COG_BLOCK,
        "blockysize": COG_BLOCK,
        "compress": "none",
        "BIGTIFF": "IF_SAFER",
    }


def write_cog(
    source: Path, destination: Path, resampling: str = "average", extra: dict[str, str] | None = None
) -> None:
    """Copy ``source`` into a COG at ``destination`` (DEFLATE, 256-pixel tiles, overviews).

    The copy goes to a ``.tmp`` name first and is renamed, so a half-written
    COG never carries the final name.
    """
    options = {
        "COMPRESS": "DEFLATE",
        "PREDICTOR": "YES",
        "BLOCKSIZE": str(COG_BLOCK),
        "OVERVIEW_RESAMPLING": resampling.upper(),
        "RESAMPLING": "NEAREST",
        "BIGTIFF": "IF_SAFER",
        **(extra or {}),
    }
    with replacing(destination) as temporary:
        rasterio.shutil.copy(str(source), str(temporary), driver="COG", **options)


@dataclass(frozen=True)
class CogReport:
    """What :func:`inspect_cog` found; ``problems`` is empty for a valid COG."""

    tiled: bool
    block_shape: tuple[int, int]
    overview_count: int
    ifd_offsets: list[int]
    problems: list[str]

    @property
    def valid(self) -> bool:
        return not self.problems


def _read_ifds(handle: BinaryIO) -> list[tuple[int, dict[int, list[int]]]]:
    """Every IFD in the chain as (offset, {tag: values}) for the integer tags a COG check needs."""
    header = handle.read(16)
    order = {b"II": "<", b"MM": ">"}.get(header[:2])
    if order is None:
        raise ValueError("not a TIFF file")
    (magic,) = struct.unpack(order + "H", header[2:4])
    big = magic == 43
    if big:
        (offset,) = struct.unpack(order + "Q", header[8:16])
        count_fmt, entry_size, next_fmt = "Q", 20, "Q"
    elif magic == 42:
        (offset,) = struct.unpack(order + "I", header[4:8])
        count_fmt, entry_size, next_fmt = "H", 12, "I"
    else:
        raise ValueError("not a TIFF file")
    sizes = {3: ("H", 2), 4: ("I", 4), 16: ("Q", 8)}
    inline = 8 if big else 4
    ifds: list[tuple[int, dict[int, list[int]]]] = []
    while offset and len(ifds) < 64:
        handle.seek(offset)
        (count,) = struct.unpack(order + count_fmt, handle.read(struct.calcsize(count_fmt)))
        raw = handle.read(count * entry_size)
        (next_offset,) = struct.unpack(order + next_fmt, handle.read(struct.calcsize(next_fmt)))
        tags: dict[int, list[int]] = {}
        for i in range(count):
            entry = raw[i * entry_size : (i + 1) * entry_size]
            tag, kind = struct.unpack(order + "HH", entry[:4])
            if kind not in sizes:
                continue
            n = struct.unpack(order + ("Q" if big else "I"), entry[4 : 12 if big else 8])[0]
            fmt, size = sizes[kind]
            value_bytes = entry[12 if big else 8 :]
            if n * size <= inline:
                data = value_bytes[: n * size]
            else:
                (pointer,) = struct.unpack(order + ("Q" if big else "I"), value_bytes)
                position = handle.tell()
                handle.seek(pointer)
                data = handle.read(n * size)
                handle.seek(position)
            tags[tag] = list(struct.unpack(order + fmt * n, data))
        ifds.append((offset, tags))
        offset = next_offset
    return ifds


def inspect_cog(path: Path) -> CogReport:
    """Check tiling, overviews and the COG byte order (all IFDs first, smallest overview's data first)."""
    problems: list[str] = []
    with rasterio.open(path) as dataset:
        block_shape = tuple(dataset.block_shapes[0])
        overview_count = len(dataset.overviews(1))
        layout = dataset.tags(ns="IMAGE_STRUCTURE").get("LAYOUT")
        needs_overviews = max(dataset.width, dataset.height) > COG_BLOCK
    if needs_overviews and overview_count == 0:
        problems.append("no overviews")
    if layout != "COG":
        problems.append(f"GDAL layout is {layout!r}, not 'COG'")
    with path.open("rb") as handle:
        ifds = _read_ifds(handle)
    tiled = bool(ifds) and all(TILE_OFFSETS_TAG in tags for _, tags in ifds)
    offsets = [offset for offset, _ in ifds]
    first_tiles = [min(tags.get(TILE_OFFSETS_TAG, [0]) or [0]) for _, tags in ifds]
    if offsets != sorted(offsets):
        problems.append("IFDs are not in increasing file order")
    if not tiled:
        problems.append("not tiled (an IFD has no TileOffsets: strip layout)")
    elif offsets and max(offsets) > min(first_tiles):
        problems.append("image data starts before the last IFD")
    widths = [tags.get(IMAGE_WIDTH_TAG, [0])[0] for _, tags in ifds]
    if widths != sorted(widths, reverse=True):
        problems.append("IFDs are not ordered from full resolution to smallest overview")
    if first_tiles != sorted(first_tiles, reverse=True):
        problems.append("tile data is not ordered from smallest overview to full resolution")
    return CogReport(
        tiled=tiled,
        block_shape=(int(block_shape[0]), int(block_shape[1])),
        overview_count=overview_count,
        ifd_offsets=offsets,
        problems=problems,
    )

"""The compact binary matrix the embedding workload writes (``embeddings.bin``).

Layout, all little-endian, 16-byte header then the matrix:

    offset  size  field
    0       4     magic  b"HEMB"
    4       2     version (uint16) = 1
    6       2     dtype code (uint16): 1 = float32
    8       4     rows (uint32)  = number of buildings, in embeddings.geojson order
    12      4     cols (uint32)  = feature dimensions
    16      rows * cols * 4     float32 values, row-major; a building without
                                 valid pixels has a row of NaN

Readable without this code: ``numpy.fromfile(path, "<f4", offset=16).reshape(rows, cols)``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from hastegeo.utils.files import replacing

MAGIC = b"HEMB"
VERSION = 1
DTYPE_FLOAT32 = 1
HEADER = struct.Struct("<4sHHII")
HEADER_SIZE = HEADER.size  # 16


@dataclass(frozen=True)
class EmbeddingHeader:
    version: int
    dtype_code: int
    rows: int
    cols: int


def write_embeddings(path: Path, matrix: npt.NDArray[np.floating]) -> None:
    """Write ``matrix`` (rows x cols) as float32 with the header; atomically (temp file + rename)."""
    values = np.ascontiguousarray(matrix, dtype="<f4")
    if values.ndim != 2:
        raise ValueError("embedding matrix must be two-dimensional")
    with replacing(path) as temporary, temporary.open("wb") as handle:
        handle.write(HEADER.pack(MAGIC, VERSION, DTYPE_FLOAT32, values.shape[0], values.shape[1]))
        handle.write(values.tobytes(order="C"))


def read_embeddings(path: Path) -> tuple[EmbeddingHeader, npt.NDArray[np.float32]]:
    """Read and check the header, return it with the matrix. Raises ``ValueError`` on a malformed file."""
    with path.open("rb") as handle:
        raw = handle.read(HEADER_SIZE)
        if len(raw) != HEADER_SIZE:
            raise ValueError("file is shorter than the embedding header")
        magic, version, dtype_code, rows, cols = HEADER.unpack(raw)
        if magic != MAGIC or version != VERSION or dtype_code != DTYPE_FLOAT32:
            raise ValueError(f"not a version-{VERSION} float32 embedding file (magic {magic!r}, version {version})")
        matrix = np.frombuffer(handle.read(), dtype="<f4")
    if matrix.size != rows * cols:
        raise ValueError(f"header says {rows}x{cols} values, file holds {matrix.size}")
    return EmbeddingHeader(version, dtype_code, rows, cols), matrix.reshape(rows, cols).astype(np.float32)

"""Parameter counts, dtypes and bytes from the headers of ``*.safetensors`` files, without reading weights.

A safetensors file is an 8-byte little-endian header length, a JSON header giving every tensor's dtype,
shape and byte range, then the data. Only the header is read, so a 70B checkpoint is inspected in well
under a second; the file's size is checked against the header (8 + header + last byte range: the
safetensors library refuses anything else), so a truncated download is named here, not deep in a load.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specmeter import inputs, jsonsafe
from specmeter.modeldir.files import ModelDirError

__all__ = ["WeightFacts", "read_weights", "tensor_names", "tensor_shapes"]

_MAX_HEADER = 100 * 2**20  # real headers are a few MB at most; anything larger is a corrupt length field
# safetensors dtype names -> the names the rest of specmeter uses
_ST_DTYPES = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2", "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
    "BOOL": "bool",
}  # fmt: skip


@dataclass(frozen=True)
class WeightFacts:
    files: int
    params: int  # stored elements (tied weights are stored once by save_pretrained)
    bytes: int
    dtype_bytes: dict[str, int]  # dtype -> bytes stored in it

    @property
    def dtype(self) -> str:
        """The dtype holding most bytes (e.g. float32, or bfloat16 with a few float32 norms)."""
        return max(self.dtype_bytes.items(), key=lambda item: item[1])[0] if self.dtype_bytes else "unknown"


def _read_header(file: Path) -> tuple[dict[str, Any], int]:
    """The header and the number of bytes it takes with its length field."""
    try:
        with inputs.open_input(file) as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                raise ModelDirError(f"{file}: unreadable safetensors header (file shorter than 8 bytes)")
            (length,) = struct.unpack("<Q", raw)
            if length > _MAX_HEADER:
                raise ModelDirError(f"{file}: unreadable safetensors header (length field {length})")
            header = jsonsafe.loads(fh.read(length).decode("utf-8"))
    except OSError as e:
        raise ModelDirError(f"{file}: unreadable ({e})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelDirError(f"{file}: unreadable safetensors header ({e})") from None
    if not isinstance(header, dict):
        raise ModelDirError(f"{file}: unreadable safetensors header (not a JSON object)")
    return header, 8 + length


def read_weights(path: Path) -> WeightFacts | None:
    """Parameter count, bytes and dtypes of a model directory; None without safetensors files."""
    files = sorted(path.glob("*.safetensors"))
    if not files:
        return None
    params = total = 0
    dtype_bytes: dict[str, int] = {}
    for file in files:
        header, data_start = _read_header(file)
        data_end = 0
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            try:
                start, end = (int(x) for x in entry["data_offsets"])
                count = math.prod(int(d) for d in entry["shape"])
                dtype = _ST_DTYPES.get(entry["dtype"], str(entry["dtype"]).lower())
            except (KeyError, TypeError, ValueError):
                raise ModelDirError(f"{file}: unreadable safetensors header (tensor {name!r})") from None
            params += count
            total += end - start
            dtype_bytes[dtype] = dtype_bytes.get(dtype, 0) + end - start
            data_end = max(data_end, end)
        size, expected = file.stat().st_size, data_start + data_end
        if size < expected:
            raise ModelDirError(
                f"{file}: truncated safetensors file ({size:,} bytes; its header describes {expected:,})"
            )
        if size > expected:
            raise ModelDirError(
                f"{file}: corrupt safetensors file ({size:,} bytes; its header describes only {expected:,})"
            )
    return WeightFacts(files=len(files), params=params, bytes=total, dtype_bytes=dtype_bytes)


def tensor_names(path: Path) -> list[str]:
    """The names of every tensor stored in the ``*.safetensors`` files of ``path`` (headers only)."""
    names: list[str] = []
    for file in sorted(path.glob("*.safetensors")):
        header, _ = _read_header(file)
        names.extend(name for name in header if name != "__metadata__")
    return names


def tensor_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape stored in the ``*.safetensors`` files of ``path`` (headers only)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for file in sorted(path.glob("*.safetensors")):
        header, _ = _read_header(file)
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            try:
                shapes[name] = tuple(int(d) for d in entry["shape"])
            except (KeyError, TypeError, ValueError):
                raise ModelDirError(f"{file}: unreadable safetensors header (tensor {name!r})") from None
    return shapes

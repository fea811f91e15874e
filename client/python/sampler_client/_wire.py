"""NumPy arrays to and from the API's packed repeated fields, without a
Python object per value.

A FloatList / DoubleList holds one packed field (number 1): its serialized
form is the tag byte 0x0a, the payload length as a varint, then the values
little-endian. Building and reading that form directly is a single copy,
where passing an array to the generated message would box every element.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

_F32 = np.dtype("<f4")
_F64 = np.dtype("<f8")


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def packed_bytes(values: np.ndarray, dtype: np.dtype) -> bytes:
    """The serialized FloatList/DoubleList holding `values` as `dtype`."""
    payload = np.ascontiguousarray(values, dtype=dtype).tobytes()
    if not payload:
        return b""
    return b"\x0a" + _varint(len(payload)) + payload


def fill_reals(reals: Any, values: Any, float32: bool) -> None:
    """Sets a Reals message to `values` (any array-like) in one precision."""
    array = np.asarray(values)
    if float32:
        reals.f32.MergeFromString(packed_bytes(array, _F32))
        reals.f32.SetInParent()
    else:
        reals.f64.MergeFromString(packed_bytes(array, _F64))
        reals.f64.SetInParent()


def read_list(list_message: Any, dtype: np.dtype) -> np.ndarray:
    """The values of a FloatList/DoubleList as a writable array."""
    data = list_message.SerializeToString()
    if not data:
        return np.empty(0, dtype=dtype.newbyteorder("="))
    if data[0] != 0x0A:  # not one packed run: take the slow, general path
        return np.array(list_message.values, dtype=dtype.newbyteorder("="))
    length, pos = _read_varint(data, 1)
    if pos + length != len(data):
        return np.array(list_message.values, dtype=dtype.newbyteorder("="))
    view = np.frombuffer(data, dtype=dtype, count=length // dtype.itemsize, offset=pos)
    return view.astype(dtype.newbyteorder("="), copy=True)


def read_reals(reals: Any) -> np.ndarray:
    """A Reals message as an array of its precision (float64 when empty)."""
    which = reals.WhichOneof("values")
    if which == "f32":
        return read_list(reals.f32, _F32)
    if which == "f64":
        return read_list(reals.f64, _F64)
    return np.empty(0, dtype=np.float64)

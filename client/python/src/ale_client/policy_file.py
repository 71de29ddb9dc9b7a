"""Writing a batch submission's policy file (`mlp-safetensors`) with NumPy alone.

The layout is the one docs/batch.md specifies: linear layers `<prefix><i>.weight` `[out, in]`
and `<prefix><i>.bias` `[out]`, optional `obs_mean`/`obs_std`, and the `activation` metadata.
A PyTorch `nn.Sequential`'s `state_dict()` already has that layout:

    ale_client.save_mlp(model.state_dict(), "policy.safetensors", activation="tanh")

The file is written in the safetensors format directly (an 8-byte little-endian header length,
a JSON header, then the tensors' bytes), so neither `torch` nor `safetensors` is needed.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any, Mapping, Optional

import numpy as np

ACTIVATIONS = ("tanh", "relu", "identity")


def _to_numpy(value: Any) -> np.ndarray:
    # A torch tensor (without importing torch): detach, move to the CPU, convert.
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(value, dtype=np.float32))


def save_tensors(tensors: Mapping[str, Any], path: os.PathLike[str] | str, metadata: Optional[Mapping[str, str]] = None) -> None:
    """Writes float32 tensors (NumPy arrays, or anything `np.asarray` takes) as safetensors."""
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        array = _to_numpy(tensors[name])
        data = array.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for blob in blobs:
            f.write(blob)


def save_mlp(
    state_dict: Mapping[str, Any],
    path: os.PathLike[str] | str,
    *,
    activation: Optional[str] = None,
    obs_mean: Any = None,
    obs_std: Any = None,
) -> None:
    """Writes an MLP policy file the evaluator's `mlp-safetensors` reader takes.

    `state_dict` maps `<prefix><i>.weight`/`.bias` to arrays (a PyTorch `state_dict()` works
    as it is). `activation` (`tanh`, `relu` or `identity`) is required for more than one layer.
    `obs_mean`/`obs_std`, given together, normalise the observation before the first layer.
    The checks here are the cheap ones; the evaluator checks the rest against the task.
    """
    weights = [k for k in state_dict if k.endswith(".weight")]
    if not weights:
        raise ValueError("no `<prefix><i>.weight` tensors: not an MLP state dict")
    if len(weights) > 1 and activation is None:
        raise ValueError(f"{len(weights)} layers need an activation: one of {ACTIVATIONS}")
    if activation is not None and activation not in ACTIVATIONS:
        raise ValueError(f"activation {activation!r}: expected one of {ACTIVATIONS}")
    if (obs_mean is None) != (obs_std is None):
        raise ValueError("obs_mean and obs_std go together")
    tensors = dict(state_dict)
    if obs_mean is not None:
        tensors["obs_mean"] = obs_mean
        tensors["obs_std"] = obs_std
    save_tensors(tensors, path, {"activation": activation} if activation else None)

"""Write a CartPole MLP policy file in the `mlp-safetensors` format, with numpy only.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install numpy safetensors
    /tmp/venv/bin/python policy/examples/write_mlp_safetensors.py policy/tests/data

writes `cartpole_mlp.safetensors` (a 4 -> 8 -> 8 -> 2 tanh MLP with observation
normalisation, keys named as PyTorch names an nn.Sequential: 0.weight, 0.bias, 2.weight, ...)
and `cartpole_mlp.expected.json` (a few observations and the MLP's outputs for them, computed
here with numpy, which the Rust tests compare against).

With PyTorch the same file comes from the trained module itself:

    model = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.Tanh(),
        torch.nn.Linear(8, 8), torch.nn.Tanh(),
        torch.nn.Linear(8, 2),
    )
    safetensors.torch.save_file(model.state_dict(), "policy.safetensors",
                                metadata={"activation": "tanh"})
"""

import json
import pathlib
import sys

import numpy as np
from safetensors.numpy import save_file

SIZES = [4, 8, 8, 2]


def main(out_dir: pathlib.Path) -> None:
    rng = np.random.default_rng(20240610)
    tensors = {}
    layers = []
    for layer, (inputs, outputs) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        # nn.Linear stores its weight as [out, in].
        weight = rng.normal(0.0, 1.0 / np.sqrt(inputs), size=(outputs, inputs)).astype(np.float32)
        bias = rng.normal(0.0, 0.1, size=(outputs,)).astype(np.float32)
        index = 2 * layer  # the Tanh modules sit at the odd indices of the Sequential
        tensors[f"{index}.weight"] = weight
        tensors[f"{index}.bias"] = bias
        layers.append((weight, bias))
    obs_mean = np.array([0.0, 0.1, 0.0, -0.1], dtype=np.float32)
    obs_std = np.array([1.0, 0.5, 0.2, 0.8], dtype=np.float32)
    tensors["obs_mean"] = obs_mean
    tensors["obs_std"] = obs_std

    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out_dir / "cartpole_mlp.safetensors"), metadata={"activation": "tanh"})

    observations = rng.uniform(-0.5, 0.5, size=(5, 4)).astype(np.float32)
    h = (observations - obs_mean) / np.maximum(obs_std, 1e-6)
    for i, (weight, bias) in enumerate(layers):
        h = h @ weight.T + bias
        if i + 1 < len(layers):
            h = np.tanh(h)
    expected = {
        "observations": observations.tolist(),
        "outputs": h.astype(np.float32).tolist(),
        "actions": [int(a) for a in np.argmax(h, axis=1)],
    }
    (out_dir / "cartpole_mlp.expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "."))

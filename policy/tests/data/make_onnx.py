"""Write the ONNX graphs the `onnx` tests of ale-policy run, with the `onnx` package only.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install onnx
    /tmp/venv/bin/python policy/tests/data/make_onnx.py policy/tests/data

The graphs are what `torch.onnx.export` makes of a 4 -> 8 -> 2 tanh MLP (Gemm with transB=1,
Tanh, Gemm), built by hand so no PyTorch is needed:

* `mlp_4_8_2.onnx`: input `obs` float32 [batch, 4] with a symbolic batch, output `out`
  float32 [batch, 2];
* `mlp_4_8_2_batch3.onnx`: the same with the batch fixed at 3;
* `wrong_input.onnx`: the same MLP taking [batch, 5];
* `unsupported_op.onnx`: [batch, 4] -> Reshape [batch, 2, 2] -> Det -> Unsqueeze -> [batch, 1]
  (tract has no Det);
* `mlp_4_8_2.weights.json`: the weights, so the Rust test computes the same MLP itself.
"""

import json
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def weights():
    w1 = (np.arange(32, dtype=np.float32).reshape(8, 4) % 7 - 3) * 0.25
    b1 = np.linspace(-0.5, 0.5, 8, dtype=np.float32)
    w2 = (np.arange(16, dtype=np.float32).reshape(2, 8) % 5 - 2) * 0.3
    b2 = np.array([0.1, -0.2], dtype=np.float32)
    return w1, b1, w2, b2


def mlp(batch, obs_dim=4):
    w1, b1, w2, b2 = weights()
    if obs_dim != 4:
        w1 = np.zeros((8, obs_dim), dtype=np.float32)
    init = [
        numpy_helper.from_array(w1, "w1"),
        numpy_helper.from_array(b1, "b1"),
        numpy_helper.from_array(w2, "w2"),
        numpy_helper.from_array(b2, "b2"),
    ]
    nodes = [
        helper.make_node("Gemm", ["obs", "w1", "b1"], ["h"], transB=1),
        helper.make_node("Tanh", ["h"], ["t"]),
        helper.make_node("Gemm", ["t", "w2", "b2"], ["out"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [batch, obs_dim])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [batch, 2])],
        init,
    )
    return graph


def unsupported():
    shape = numpy_helper.from_array(np.array([-1, 2, 2], dtype=np.int64), "shape")
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    nodes = [
        helper.make_node("Reshape", ["obs", "shape"], ["square"]),
        helper.make_node("Det", ["square"], ["det"]),
        helper.make_node("Unsqueeze", ["det", "axes"], ["out"]),
    ]
    return helper.make_graph(
        nodes,
        "det",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 1])],
        [shape, axes],
    )


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def main(out_dir: pathlib.Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    save(mlp("batch"), out_dir / "mlp_4_8_2.onnx")
    save(mlp(3), out_dir / "mlp_4_8_2_batch3.onnx")
    save(mlp("batch", obs_dim=5), out_dir / "wrong_input.onnx")
    save(unsupported(), out_dir / "unsupported_op.onnx")
    w1, b1, w2, b2 = weights()
    (out_dir / "mlp_4_8_2.weights.json").write_text(
        json.dumps({"w1": w1.tolist(), "b1": b1.tolist(), "w2": w2.tolist(), "b2": b2.tolist()})
        + "\n"
    )


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "."))

#!/usr/bin/env python3
"""Writes a model whose single initializer is BYTES long and lives in a sparse external file
(zeros, no disk blocks), with y = Gather(w, idx) for an input idx int64[3], so that running it is
cheap and the weight reaches the plan.

    make_large_model.py OUT.onnx BYTES
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

out, size = sys.argv[1], int(sys.argv[2])
count = size // 4
data = os.path.join(os.path.dirname(os.path.abspath(out)), "weights.bin")
with open(data, "wb") as f:
    f.truncate(count * 4)
w = TensorProto()
w.name = "w"
w.data_type = TensorProto.FLOAT
w.dims.append(count)
w.data_location = TensorProto.EXTERNAL
for key, value in (("location", "weights.bin"), ("offset", "0"), ("length", str(count * 4))):
    entry = w.external_data.add()
    entry.key, entry.value = key, value
graph = helper.make_graph([helper.make_node("Gather", ["w", "idx"], ["y"])], "large",
                          [helper.make_tensor_value_info("idx", TensorProto.INT64, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], initializer=[w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
with open(out, "wb") as f:
    f.write(model.SerializeToString())

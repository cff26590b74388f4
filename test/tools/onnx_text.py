#!/usr/bin/env python3
"""Turns a model written in ONNX's textual syntax into a .onnx file, for importer tests.

    onnx_text.py TEST_FILE -o OUT.onnx [--external-data NAME]

The model text is every line of TEST_FILE between '# ONNX-BEGIN' and '# ONNX-END' (each
stripped of a leading '# ' or '// '). --external-data moves the initializers into a file NAME
beside OUT.onnx; --raw-data false keeps typed fields; --location overrides the external path.
"""
import argparse
import os
import sys

import onnx
import onnx.external_data_helper as ext
import onnx.parser


def model_text(path, block=0):
    """The text of the `block`-th ONNX-BEGIN/ONNX-END block (a file may hold several models)."""
    blocks, lines, inside = [], [], False
    for line in open(path):
        stripped = line.rstrip("\n")
        for prefix in ("// ", "# ", "//", "#"):
            if stripped.startswith(prefix):
                stripped = stripped[len(prefix):]
                break
        if stripped.strip() == "ONNX-BEGIN":
            inside = True
        elif stripped.strip() == "ONNX-END":
            inside = False
            blocks.append("\n".join(lines))
            lines = []
        elif inside:
            lines.append(stripped)
    return blocks[block]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("source")
    p.add_argument("-o", required=True)
    p.add_argument("--block", type=int, default=0, help="which model of the file (0 = the first)")
    p.add_argument("--external-data")
    p.add_argument("--location", help="rewrite every external location to this string")
    p.add_argument("--typed-fields", action="store_true", help="store float initializers in float_data")
    args = p.parse_args()
    model = onnx.parser.parse_model(model_text(args.source, args.block))
    if args.typed_fields:
        for init in model.graph.initializer:
            if init.data_type == onnx.TensorProto.FLOAT and init.raw_data:
                values = onnx.numpy_helper.to_array(init).flatten().tolist()
                init.ClearField("raw_data")
                init.float_data.extend(values)
    else:
        for init in model.graph.initializer:
            if not init.raw_data:
                init.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(init), init.name))
    if args.external_data:
        ext.convert_model_to_external_data(model, all_tensors_to_one_file=True, location=args.external_data,
                                           size_threshold=0)
        ext.write_external_data_tensors(model, os.path.dirname(os.path.abspath(args.o)))
        if args.location:
            for init in model.graph.initializer:
                for entry in init.external_data:
                    if entry.key == "location":
                        entry.value = args.location
    with open(args.o, "wb") as f:
        f.write(model.SerializeToString())


if __name__ == "__main__":
    sys.exit(main())

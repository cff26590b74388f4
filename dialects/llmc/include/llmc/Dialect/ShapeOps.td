// Constants and ops that reshape, reorder, combine, select or generate data.
#ifndef LLMC_SHAPE_OPS_TD
#define LLMC_SHAPE_OPS_TD

include "llmc/Dialect/LlmcBase.td"

def Llmc_ConstantOp : Llmc_Op<"constant", [ConstantLike]> {
  let summary = "a constant tensor";
  let description = [{
    Small constants are dense attributes; weights are `dense_resource` handles whose bytes live
    outside the IR (in the imported model or a heap blob), so IR never copies or prints them.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Llmc_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let extraClassDeclaration = commonDeclarations # [{
    ::mlir::OpFoldResult fold(FoldAdaptor) { return getValue(); }
  }];
}

def Llmc_ShapeOp : Llmc_Op<"shape"> {
  let summary = "the shape of a tensor as a 1-D i64 tensor";
  let description = "Dimensions `[start, end)` of the operand (negative values count from the end).";
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<I64Attr, "0">:$start, OptionalAttr<I64Attr>:$end);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_ReshapeOp : Llmc_Op<"reshape"> {
  let summary = "reshape to a shape given as a tensor";
  let description = [{
    ONNX Reshape: `-1` infers one dimension; `0` copies the input dimension unless `allowzero`.
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$shape, DefaultValuedAttr<I64Attr, "0">:$allowzero);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_UnsqueezeOp : Llmc_Op<"unsqueeze"> {
  let summary = "insert unit dimensions";
  let arguments = (ins Llmc_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_SqueezeOp : Llmc_Op<"squeeze"> {
  let summary = "remove unit dimensions";
  let description = "Removes `axes`; all unit dimensions when `axes` is empty.";
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_FlattenOp : Llmc_Op<"flatten"> {
  let summary = "flatten to a matrix";
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_IdentityOp : Llmc_Op<"identity"> {
  let summary = "identity";
  let arguments = (ins Llmc_Tensor:$input);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_TransposeOp : Llmc_Op<"transpose"> {
  let summary = "permute dimensions";
  let description = "Result dimension i is input dimension `perm[i]`; reversed order when `perm` is empty.";
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$perm);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_ConcatOp : Llmc_Op<"concat"> {
  let summary = "concatenate along an axis";
  let arguments = (ins Variadic<Llmc_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_SplitOp : Llmc_Op<"split"> {
  let summary = "split along an axis into parts of the given sizes";
  let description = [{
    `split` gives the parts' sizes; without it, `num_outputs` equal parts (the last one smaller
    when the size does not divide), which a dynamic axis needs (sizes known only per run).
  }];
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<I64Attr, "0">:$axis,
                   OptionalAttr<DenseI64ArrayAttr>:$split, OptionalAttr<I64Attr>:$num_outputs);
  let results = (outs Variadic<Llmc_Tensor>:$outputs);
  let extraClassDeclaration = commonDeclarations # [{
    ::llvm::LogicalResult fold(FoldAdaptor adaptor, ::llvm::SmallVectorImpl<::mlir::OpFoldResult> &results) {
      return ::llmc::foldWithKernels(getOperation(), adaptor.getOperands(), results);
    }
  }];
}

def Llmc_SliceOp : Llmc_Op<"slice"> {
  let summary = "strided slice with constant bounds";
  let description = [{
    ONNX Slice with `starts`, `ends`, `axes` and `steps` as attributes (the importer requires
    them to be constant); out-of-range bounds clamp as in ONNX.
  }];
  let arguments = (ins Llmc_Tensor:$input, DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$ends,
                   DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$steps);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_DynamicSliceOp : Llmc_Op<"dynamic_slice"> {
  let summary = "strided slice whose starts and ends are computed at run time";
  let description = [{
    ONNX Slice whose `starts` and `ends` are 1-D integer tensors (typically derived from input
    shapes, as in `mask[:, :seq]`); `axes` and `steps` are constant attributes. Clamping as in
    ONNX. Becomes `llmc.slice` once starts and ends fold to constants.
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$starts, Llmc_Tensor:$ends,
                   DenseI64ArrayAttr:$axes, DenseI64ArrayAttr:$steps);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_GatherOp : Llmc_Op<"gather"> {
  let summary = "gather slices along an axis";
  let description = "Result shape: `data[:axis] + indices + data[axis+1:]`; negative indices count from the end.";
  let arguments = (ins Llmc_Tensor:$data, Llmc_Tensor:$indices, DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_GatherElementsOp : Llmc_Op<"gather_elements"> {
  let summary = "gather single elements along an axis";
  let arguments = (ins Llmc_Tensor:$data, Llmc_Tensor:$indices, DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_GatherNdOp : Llmc_Op<"gather_nd"> {
  let summary = "gather by index tuples";
  let arguments = (ins Llmc_Tensor:$data, Llmc_Tensor:$indices, DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_ExpandOp : Llmc_Op<"expand"> {
  let summary = "broadcast to a shape given as a tensor";
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$shape);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_RangeOp : Llmc_Op<"range"> {
  let summary = "arithmetic sequence";
  let description = "`ceil((limit - start) / delta)` elements `start + i * delta`; operands are scalars.";
  let arguments = (ins Llmc_Tensor:$start, Llmc_Tensor:$limit, Llmc_Tensor:$delta);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_ConstantOfShapeOp : Llmc_Op<"constant_of_shape"> {
  let summary = "a tensor filled with one value";
  let arguments = (ins Llmc_Tensor:$shape, TypeAttr:$dtype, DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_PadOp : Llmc_Op<"pad"> {
  let summary = "pad (or crop, with negative amounts) every axis";
  let description = [{
    `pads` holds the begin amounts of every axis, then the end amounts. `mode` is "constant"
    (fill with `value`, 0 when absent), "reflect", "edge" or "wrap", as in ONNX Pad.
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_OptionalTensor:$value, DenseI64ArrayAttr:$pads,
                   DefaultValuedStrAttr<StrAttr, "constant">:$mode);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_TileOp : Llmc_Op<"tile"> {
  let summary = "repeat a tensor along each axis";
  let arguments = (ins Llmc_Tensor:$input, DenseI64ArrayAttr:$repeats);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_ScatterElementsOp : Llmc_Op<"scatter_elements"> {
  let summary = "write updates at indices along an axis";
  let description = [{
    A copy of `data` where `out[..., indices[i], ...] = updates[i]` along `axis`, or combined with
    the old value when `reduction` is "add", "mul", "max" or "min".
  }];
  let arguments = (ins Llmc_Tensor:$data, Llmc_Tensor:$indices, Llmc_Tensor:$updates,
                   DefaultValuedAttr<I64Attr, "0">:$axis, DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_ScatterNdOp : Llmc_Op<"scatter_nd"> {
  let summary = "write update slices at index tuples";
  let arguments = (ins Llmc_Tensor:$data, Llmc_Tensor:$indices, Llmc_Tensor:$updates,
                   DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_TriluOp : Llmc_Op<"trilu"> {
  let summary = "upper or lower triangle of the last two dimensions";
  let arguments = (ins Llmc_Tensor:$input, Llmc_OptionalTensor:$k, DefaultValuedAttr<I64Attr, "1">:$upper);
  let results = (outs Llmc_Tensor:$result);
}

#endif // LLMC_SHAPE_OPS_TD

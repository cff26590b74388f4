// Normalization ops: softmax family and layer/RMS normalization.
#ifndef LLMC_NORMALIZATION_OPS_TD
#define LLMC_NORMALIZATION_OPS_TD

include "llmc/Dialect/LlmcBase.td"

def Llmc_SoftmaxOp : Llmc_Op<"softmax"> {
  let summary = "softmax along one axis";
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_LogSoftmaxOp : Llmc_Op<"log_softmax"> {
  let summary = "log of softmax along one axis";
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_LayerNormOp : Llmc_Op<"layer_norm"> {
  let summary = "layer normalization";
  let description = [{
    Normalizes over dimensions `[axis, rank)` to zero mean and unit variance, then multiplies by
    `scale` and adds `bias` (optional). Only the normalized output is produced.
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$scale, Llmc_OptionalTensor:$bias,
                   DefaultValuedAttr<I64Attr, "-1">:$axis, DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_LayerNormStatsOp : Llmc_Op<"layer_norm_stats"> {
  let summary = "mean and inverse standard deviation of layer normalization";
  let description = [{
    The statistics ONNX LayerNormalization can also output: over dimensions `[axis, rank)`, the
    mean and `1 / sqrt(variance + epsilon)`, each shaped like the input with those dimensions 1.
  }];
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<I64Attr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Llmc_Tensor:$mean, Llmc_Tensor:$inv_std_dev);
  let extraClassDeclaration = commonDeclarations # [{
    ::llvm::LogicalResult fold(FoldAdaptor adaptor, ::llvm::SmallVectorImpl<::mlir::OpFoldResult> &results) {
      return ::llmc::foldWithKernels(getOperation(), adaptor.getOperands(), results);
    }
  }];
}

def Llmc_InstanceNormOp : Llmc_Op<"instance_norm"> {
  let summary = "instance normalization";
  let description = "Normalizes each (batch, channel) over the spatial axes, then `* scale[c] + bias[c]`.";
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$scale, Llmc_Tensor:$bias,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_GroupNormOp : Llmc_Op<"group_norm"> {
  let summary = "group normalization";
  let description = [{
    Channels (axis 1) split into `num_groups` groups; each (batch, group) is normalized over its
    channels and spatial elements, then each channel is scaled and shifted.
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$scale, Llmc_Tensor:$bias, I64Attr:$num_groups,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_RmsNormOp : Llmc_Op<"rms_norm"> {
  let summary = "RMS normalization";
  let description = "`x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * scale`.";
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$scale,
                   DefaultValuedAttr<I64Attr, "-1">:$axis, DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Llmc_Tensor:$result);
}

#endif // LLMC_NORMALIZATION_OPS_TD

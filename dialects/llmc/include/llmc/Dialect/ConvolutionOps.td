// Convolution and pooling over NC[spatial...] tensors (1 to 3 spatial dimensions).
#ifndef LLMC_CONVOLUTION_OPS_TD
#define LLMC_CONVOLUTION_OPS_TD

include "llmc/Dialect/LlmcBase.td"

def Llmc_ConvOp : Llmc_Op<"conv"> {
  let summary = "grouped, strided, dilated convolution";
  let description = [{
    `input` is [N, C, spatial...], `weight` [M, C / group, kernel...], `bias` (optional) [M].
    `pads` holds the begin paddings of every spatial axis, then the end paddings (the importer
    resolves ONNX's auto_pad into them).
  }];
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$weight, Llmc_OptionalTensor:$bias,
                   DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Llmc_Tensor:$result);
}

class Llmc_PoolOp<string mnemonic, string what> : Llmc_Op<mnemonic> {
  let summary = what # " pooling";
  let description = [{
    Windows of `kernel_shape` over the spatial axes, with begin-then-end `pads`, `strides`,
    `dilations` and `ceil_mode` as in ONNX. Average pooling divides by the window's size, or by
    the number of input elements in it when `count_include_pad` is 0.
  }];
  let arguments = (ins Llmc_Tensor:$input, DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<I64Attr, "0">:$ceil_mode, DefaultValuedAttr<I64Attr, "0">:$count_include_pad);
  let results = (outs Llmc_Tensor:$result);
}
def Llmc_MaxPoolOp : Llmc_PoolOp<"max_pool", "maximum">;
def Llmc_AveragePoolOp : Llmc_PoolOp<"average_pool", "average">;

def Llmc_MaxPoolWithIndicesOp : Llmc_Op<"max_pool_with_indices"> {
  let summary = "max pooling that also returns where each maximum came from";
  let description = [{
    As `max_pool`; `indices` holds each maximum's flat index in the input (row major, or with
    the two spatial axes swapped when `storage_order` is 1), as ONNX MaxPool's second output.
  }];
  let arguments = (ins Llmc_Tensor:$input, DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<I64Attr, "0">:$ceil_mode, DefaultValuedAttr<I64Attr, "0">:$storage_order);
  let results = (outs Llmc_Tensor:$values, Llmc_Tensor:$indices);
  let extraClassDeclaration = commonDeclarations # [{
    ::llvm::LogicalResult fold(FoldAdaptor adaptor, ::llvm::SmallVectorImpl<::mlir::OpFoldResult> &results) {
      return ::llmc::foldWithKernels(getOperation(), adaptor.getOperands(), results);
    }
  }];
}

def Llmc_BatchNormOp : Llmc_Op<"batch_norm"> {
  let summary = "inference-mode batch normalization";
  let description = "`(x - mean) / sqrt(var + epsilon) * scale + bias` per channel (axis 1).";
  let arguments = (ins Llmc_Tensor:$input, Llmc_Tensor:$scale, Llmc_Tensor:$bias, Llmc_Tensor:$mean,
                   Llmc_Tensor:$var, DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Llmc_Tensor:$result);
}

#endif // LLMC_CONVOLUTION_OPS_TD

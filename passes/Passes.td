// llmc passes. Flags are prefixed `llmc-`; each description shows IR before and after.
#ifndef LLMC_PASSES_TD
#define LLMC_PASSES_TD

include "mlir/Pass/PassBase.td"

def LlmcVerifyStaticShapes : Pass<"llmc-verify-static-shapes", "mlir::func::FuncOp"> {
  let summary = "Checks that every tensor shape is static or follows from bounded input symbols";
  let description = [{
    After folding, every value must have a static shape, unless the function carries
    `llmc.symbol_bounds` (from `llmc --max-shape seq=512`): then every dynamic dimension must be
    an expression in the bounded input symbols (see SymbolicShapes.h), and the pass names the
    first op whose dimension is not (for instance one that depends on tensor data). Without
    bounds it names the first op with a dynamic shape and the inputs whose shape the user should
    fix with `--input-shape`.

    Before (fails):
    ```mlir
    func.func @main(%x: tensor<1x?xi64>) -> tensor<1x?xi64> { ... }
    ```
    error: 'llmc.add' (node "Add_3") has a dynamic result shape tensor<1x?xf32>; set the shape of
    input 'x' with --input-shape x=1x16
  }];
}

def LlmcDropIdentities : Pass<"llmc-drop-identities", "mlir::func::FuncOp"> {
  let summary = "Removes llmc.identity ops and casts to the same type";
  let description = [{
    Exporters leave Identity and Dropout nodes (imported as `llmc.identity`) and no-op casts.

    Before:
    ```mlir
    %1 = llmc.identity %0 : (tensor<2xf32>) -> tensor<2xf32>
    %2 = llmc.add %1, %1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    ```
    After:
    ```mlir
    %2 = llmc.add %0, %0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    ```
  }];
}

def LlmcFoldShapes : Pass<"llmc-fold-shapes", "mlir::func::FuncOp"> {
  let summary = "Folds shape subgraphs to constants and refines result types to a fixed point";
  let description = [{
    Exported transformers compute shapes at run time (Shape, Gather, Concat, Range, Expand,
    Where, ... chains). With static input shapes those chains are constant: this pass folds
    every op whose operands are constants (through the ops' kernel-backed folders) and
    re-infers result types, so a reshape whose target shape just became a constant gets a
    static result type, which lets the next op fold, until nothing changes. The function's
    signature is updated to the refined result types.

    Before:
    ```mlir
    %s = llmc.shape %x : (tensor<1x16xi64>) -> tensor<2xi64>
    %r = llmc.reshape %y, %s : (tensor<16xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    ```
    After:
    ```mlir
    %c = llmc.constant dense<[1, 16]> : tensor<2xi64>
    %r = llmc.reshape %y, %c : (tensor<16xf32>, tensor<2xi64>) -> tensor<1x16xf32>
    ```
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "unsigned", /*default=*/"16",
           "Upper bound on fold/refine rounds">
  ];
}

#endif // LLMC_PASSES_TD

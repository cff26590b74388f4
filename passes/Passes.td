// llmc passes. Flags are prefixed `llmc-`; each description shows IR before and after.
#ifndef LLMC_PASSES_TD
#define LLMC_PASSES_TD

include "mlir/Pass/PassBase.td"

def LlmcVerifyStaticShapes : Pass<"llmc-verify-static-shapes", "mlir::func::FuncOp"> {
  let summary = "Checks that every tensor has a static shape before plan emission";
  let description = [{
    The plan format of this version holds static shapes only. After folding, every value must
    have a static shape; the pass names the first op that does not and the inputs whose shape
    the user should fix with `--input-shape`.

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

#endif // LLMC_PASSES_TD

// RUN: %llmc-opt %s -llmc-verify-static-shapes -split-input-file -verify-diagnostics

// A fully static function passes.
func.func @static(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = llmc.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @dynamic(%x: tensor<?x3xf32> {llmc.name = "input_ids"}) -> tensor<?x3xf32> {
  // expected-error @+1 {{result type 'tensor<?x3xf32>' is not static; give the shapes of inputs with dynamic dimensions (input_ids) with --input-shape NAME=DIMS}}
  %0 = llmc.neg %x : (tensor<?x3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

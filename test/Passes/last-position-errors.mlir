// RUN: %llmc-opt %s -llmc-last-position="outputs=logits" -split-input-file -verify-diagnostics

// expected-error @+1 {{the model has no output named 'logits'}}
func.func @no_such_output(%x: tensor<1x7x64xf32>) -> (tensor<1x7x64xf32> {llmc.name = "hidden"}) {
  return %x : tensor<1x7x64xf32>
}

// -----

// expected-error @+1 {{output 'logits' is 'tensor<64xf32>', not [batch, seq, ...]}}
func.func @not_a_sequence(%x: tensor<64xf32>) -> (tensor<64xf32> {llmc.name = "logits"}) {
  return %x : tensor<64xf32>
}

// Elementwise ops: numpy broadcasting for binary and ternary ops.
#ifndef LLMC_ELEMENTWISE_OPS_TD
#define LLMC_ELEMENTWISE_OPS_TD

include "llmc/Dialect/LlmcBase.td"

class Llmc_BinaryOp<string mnemonic, string what> : Llmc_Op<mnemonic> {
  let summary = what;
  let description = "Elementwise `" # what # "` of two tensors of one element type, with numpy broadcasting.";
  let arguments = (ins Llmc_Tensor:$lhs, Llmc_Tensor:$rhs);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_AddOp : Llmc_BinaryOp<"add", "addition">;
def Llmc_SubOp : Llmc_BinaryOp<"sub", "subtraction">;
def Llmc_MulOp : Llmc_BinaryOp<"mul", "multiplication">;
def Llmc_DivOp : Llmc_BinaryOp<"div", "division (integers truncate)">;
def Llmc_PowOp : Llmc_BinaryOp<"pow", "power">;
def Llmc_MaxOp : Llmc_BinaryOp<"max", "maximum">;
def Llmc_MinOp : Llmc_BinaryOp<"min", "minimum">;
def Llmc_AndOp : Llmc_BinaryOp<"and", "logical and">;
def Llmc_OrOp : Llmc_BinaryOp<"or", "logical or">;
def Llmc_XorOp : Llmc_BinaryOp<"xor", "logical xor">;
// Comparisons yield i1.
def Llmc_EqualOp : Llmc_BinaryOp<"equal", "equality comparison">;
def Llmc_LessOp : Llmc_BinaryOp<"less", "less-than comparison">;
def Llmc_LessEqualOp : Llmc_BinaryOp<"less_equal", "less-or-equal comparison">;
def Llmc_GreaterOp : Llmc_BinaryOp<"greater", "greater-than comparison">;
def Llmc_GreaterEqualOp : Llmc_BinaryOp<"greater_equal", "greater-or-equal comparison">;

class Llmc_UnaryOp<string mnemonic, string what> : Llmc_Op<mnemonic> {
  let summary = what;
  let description = "Elementwise `" # what # "`; the result has the operand's type.";
  let arguments = (ins Llmc_Tensor:$input);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_NegOp : Llmc_UnaryOp<"neg", "negation">;
def Llmc_AbsOp : Llmc_UnaryOp<"abs", "absolute value">;
def Llmc_SqrtOp : Llmc_UnaryOp<"sqrt", "square root">;
def Llmc_ReciprocalOp : Llmc_UnaryOp<"reciprocal", "reciprocal">;
def Llmc_ExpOp : Llmc_UnaryOp<"exp", "exponential">;
def Llmc_LogOp : Llmc_UnaryOp<"log", "natural logarithm">;
def Llmc_TanhOp : Llmc_UnaryOp<"tanh", "hyperbolic tangent">;
def Llmc_ErfOp : Llmc_UnaryOp<"erf", "error function">;
def Llmc_SigmoidOp : Llmc_UnaryOp<"sigmoid", "logistic sigmoid">;
def Llmc_SiluOp : Llmc_UnaryOp<"silu", "SiLU (swish), x * sigmoid(x)">;
def Llmc_ReluOp : Llmc_UnaryOp<"relu", "rectified linear unit">;
def Llmc_CosOp : Llmc_UnaryOp<"cos", "cosine">;
def Llmc_SinOp : Llmc_UnaryOp<"sin", "sine">;
def Llmc_FloorOp : Llmc_UnaryOp<"floor", "floor">;
def Llmc_CeilOp : Llmc_UnaryOp<"ceil", "ceiling">;
def Llmc_NotOp : Llmc_UnaryOp<"not", "logical not">;

def Llmc_RoundOp : Llmc_UnaryOp<"round", "rounding to the nearest integer, halves to even">;
def Llmc_SignOp : Llmc_UnaryOp<"sign", "sign (-1, 0 or 1)">;
def Llmc_SoftplusOp : Llmc_UnaryOp<"softplus", "softplus, log(1 + exp(x))">;
def Llmc_HardSwishOp : Llmc_UnaryOp<"hard_swish", "hard swish, x * max(0, min(1, x / 6 + 1 / 2))">;

class Llmc_AlphaOp<string mnemonic, string what, string alpha> : Llmc_Op<mnemonic> {
  let summary = what;
  let description = "Elementwise `" # what # "` with ONNX's `alpha` (default " # alpha # ").";
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<F32Attr, alpha>:$alpha);
  let results = (outs Llmc_Tensor:$result);
}
def Llmc_EluOp : Llmc_AlphaOp<"elu", "exponential linear unit", "1.0">;
def Llmc_LeakyReluOp : Llmc_AlphaOp<"leaky_relu", "leaky rectified linear unit", "0.01">;

def Llmc_HardSigmoidOp : Llmc_Op<"hard_sigmoid"> {
  let summary = "hard sigmoid, max(0, min(1, alpha * x + beta))";
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedAttr<F32Attr, "0.2">:$alpha,
                   DefaultValuedAttr<F32Attr, "0.5">:$beta);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_ModOp : Llmc_Op<"mod"> {
  let summary = "remainder";
  let description = [{
    With `fmod = 0` (integers only) the remainder has the sign of the divisor, as in Python;
    with `fmod = 1` it has the sign of the dividend, as C's fmod. Numpy broadcasting.
  }];
  let arguments = (ins Llmc_Tensor:$lhs, Llmc_Tensor:$rhs, DefaultValuedAttr<I64Attr, "0">:$fmod);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_IsNanOp : Llmc_Op<"is_nan"> {
  let summary = "NaN test";
  let description = "Elementwise: true where the float operand is NaN; the result is i1.";
  let arguments = (ins Llmc_Tensor:$input);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_GeluOp : Llmc_Op<"gelu"> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `approximate = "none"` computes x * Phi(x) with erf; `"tanh"` uses the tanh approximation.
  }];
  let arguments = (ins Llmc_Tensor:$input, DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_WhereOp : Llmc_Op<"where"> {
  let summary = "select by condition";
  let description = "`result = condition ? x : y` elementwise, with numpy broadcasting of all three.";
  let arguments = (ins Llmc_Tensor:$condition, Llmc_Tensor:$x, Llmc_Tensor:$y);
  let results = (outs Llmc_Tensor:$result);
}

def Llmc_CastOp : Llmc_Op<"cast"> {
  let summary = "element type conversion";
  let description = [{
    Converts each element to the element type `to`. Float to integer truncates toward zero and
    saturates; any non-zero value becomes true for i1.
  }];
  let arguments = (ins Llmc_Tensor:$input, TypeAttr:$to);
  let results = (outs Llmc_Tensor:$result);
}

#endif // LLMC_ELEMENTWISE_OPS_TD

// The expression front end of `kiln kernel --expr`: one tensor expression written with the op
// registry's names (ir/op_schemas.cpp) as functions, read into an ir::Graph through the same
// builder as the text format and the module API (Graph::create_placeholder / create_call), so
// every op's schema binds its arguments and its shape rule infers its type.
//
// The language:
//   expression := sum                     sum  := product (('+' | '-') product)*
//   product    := unary (('*' | '/') unary)*
//   unary      := '-' unary | primary
//   primary    := number | input | op '(' arguments ')' | '(' expression ')'
//   arguments  := (argument (',' argument)*)?      argument := [name '='] value
//   value      := expression | '[' (value (',' value)*)? ']' | 'string' | "string" | True | False
//                 | None | a dtype name (f32, i64, ...)
// `+ - * /` are add, sub, mul and div (infix, with the usual precedence; arithmetic on two numbers
// is folded), unary minus is neg; numbers are ints (`2`) or floats (`2.0`, `1e-3`); an op's
// positional and keyword arguments follow its schema: `softmax(x, -1)`, `sum(x * x, 1)`,
// `mean(x, [0, 1], keepdim=True)`, `gelu(x, approximate='tanh')`.
//
// Every error is one kiln::Error "expression:1:COLUMN: message" naming the 1-based column:
//   expression:1:12: expected ')' after the arguments of 'gelu', found end of expression
//   expression:1:1: unknown op 'gelo' ...        expression:1:5: unknown input 'y' ...
//   expression:1:3: node %add (add): ... (a shape or dtype error of the op's shape rule)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace kiln::frontends {

// One named input of an expression: `x=f32[s0, 4096]`.
struct ExpressionInput {
  std::string name;
  ir::TensorMeta meta;  // contiguous
};

// Reads `NAME=DTYPE[DIM, ...]` (a dim is an integer or a symbolic size such as s0); throws
// kiln::Error naming the spec and what is wrong.
ExpressionInput parse_expression_input(std::string_view spec);

// The graph computing `expression` over `inputs` (its placeholders, in the order given; inputs
// the expression does not use are still placeholders) with one output, named "out" (or a
// unique variant when an input has that name).
ir::Graph parse_expression(std::string_view expression, const std::vector<ExpressionInput>& inputs);

}  // namespace kiln::frontends

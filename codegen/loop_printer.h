// The readable text form of a loop program (`kiln dump --stage loops`), in the spirit of
// Inductor's IR dumps: the symbols and where they come from, the buffers (kind, dtype,
// shape, source), then each node with its kind, ranges, reduction ranges and kind, output
// buffers, origins, and its body as an expression:
//
//   node add: Pointwise  origins=[add]
//     ranges [s0, 128]
//     add[128*x0 + x1] = matmul[128*x0 + x1] + fc1_bias[x1]
//
// Loads print as buffer[index], masked loads as masked(mask, load, other), casts as the
// target dtype applied like a function (f32(x)), constants of f32, i64 and bool as plain
// literals and of other dtypes as dtype(literal). Externs print their strided views.
// The text is for people; nothing parses it back.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/loop_ir.h"

namespace kiln::codegen {

// Where graph nodes come from, by name ("model.py:12 fc1"): `kiln dump --show-source` passes
// them, and the printers add a "# from" note to each loop node and kernel.
using SourceNotes = std::map<std::string, std::string>;
// "  # from a.py:3 fc1; a.py:4 fc2" for the distinct known sources of `origins` ("" if none).
std::string source_note(const std::vector<std::string>& origins, const SourceNotes* sources);

std::string print_loop_program(const LoopProgram& program, const SourceNotes* sources = nullptr);

// One expression of `program`, as print_loop_program writes bodies.
std::string print_expr(const LoopProgram& program, const Expr& expr);

}  // namespace kiln::codegen

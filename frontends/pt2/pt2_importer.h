// The PyTorch front end: a .pt2 file (torch.export.save) to a Kiln graph.
//
//  1. the archive (pt2_archive.h: format, version, the model) and its export schema
//     (pt2_schema.h: schema version 8.x);
//  2. every node's target is looked up in the ATen table (aten_op_table.h) first, and all
//     unsupported ones are reported at once (target, count, node names) before any conversion;
//  3. the graph signature: user inputs become placeholders named as in the program, with
//     symbolic dims as Kiln symbols of the same names (pt2_symbols.h) and their range
//     constraints (Dim("b", min=1, max=1024)) as the signature's symbol ranges, which the
//     interpreter and the compiled guards check; parameters, buffers and
//     lifted tensor constants become graph parameters read by get_attr nodes named as in the
//     program (p_fc_weight reads "fc.weight"), their values from the archive's weight and
//     constant files (pt2_weights.h), and their kinds (PARAMETER, BUFFER, CONSTANT_TENSOR)
//     the graph signature's (ir/graph_signature.h);
//  4. nodes are converted in order by their converters; in-place ops and views arrive as
//     Kiln's in-place ops and views, for passes/functionalize. Each converted tensor's dtype,
//     rank and sizes are checked against the metadata torch.export recorded (a mismatch is an
//     importer bug: kiln::InternalError naming the node);
//  5. outputs: the user outputs in order (a symbolic int becomes a 0-d i64 tensor; a loss
//     output is marked LOSS_OUTPUT in the graph signature); buffer, parameter and user-input
//     mutations of a functional program are written back with copy_ into what they mutate, so
//     that functionalization turns every mutation, in either IR, into the same mutation
//     outputs (BUFFER_MUTATION, ...) after the user outputs.
// Each node keeps the user's source line (stack_trace) and module path (nn_module_stack).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::frontends {

// Throws kiln::Error for everything a .pt2 file can get wrong, naming the file (and node).
ir::Graph import_pt2(const std::string& path);

// The archive's sample inputs (data/sample_inputs/<model>.pt), by the graph's placeholder
// names (the program's user inputs). Throws kiln::Error when the archive has none, or they do
// not match the program's inputs.
std::map<std::string, Tensor> read_pt2_sample_inputs(const std::string& path);

// The targets a .pt2 program calls ("aten.add.Tensor", "_operator.mul"), with how many nodes
// call each. Throws kiln::Error for an archive or schema the importer cannot read.
std::map<std::string, int> pt2_program_targets(const std::string& path);

// The ATen targets the importer converts ("aten.add.Tensor", "_operator.mul", ...), sorted.
std::vector<std::string> supported_aten_targets();

}  // namespace kiln::frontends

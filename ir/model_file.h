// Kiln's own model files: a graph in the IR's text form (.kiln) or JSON form (.json), with
// its parameters in a safetensors file of the same stem beside it
// (model.kiln -> model.safetensors).
//
// load_model reads the graph and, when the weights file exists, every tensor in it as a graph
// parameter; a get_attr whose parameter is missing is an error naming the weights file (and
// saying when that file does not exist). save_model writes the weights (only when the graph
// has parameters) and then the graph, each atomically, and refuses to replace an existing
// file unless asked to.
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln::ir {

// The weights file that belongs to a model file: same folder and stem, ".safetensors".
std::string weights_path_for(const std::string& model_path);

// Throws kiln::Error for a missing file, an unsupported extension (listing .kiln and .json),
// and any parse or weights error (naming the file, and line:col or JSON path).
Graph load_model(const std::string& path);

// Writes `graph` to `path` (.kiln or .json) and its parameters beside it. Without
// `overwrite`, an existing model or weights file is an error and nothing is written.
void save_model(const Graph& graph, const std::string& path, bool overwrite = false);

}  // namespace kiln::ir

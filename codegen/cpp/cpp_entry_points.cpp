// The C++ backend's support functions and entry points (codegen/cpp/cpp_source_printer.h lists
// the printer's parts): the helpers every module defines (messages, dtype names, OpenMP
// reductions, CBLAS declarations and layouts), then the compiled-artifact ABI
// (runtime/compiled_abi.h): kiln_abi_version, kiln_bind (guards on the inputs' dtypes, ranks,
// sizes and strides, and the binding of shape symbols), kiln_output_sizes,
// kiln_workspace_bytes and kiln_run (buffers placed, kernels called in order, faults reported).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "codegen/cpp/cpp_source_printer.h"
#include "passes/value_bounds.h"
#include "runtime/compiled_abi.h"

namespace kiln::codegen {

void CppSourcePrinter::emit_support() {
  w_.line("extern \"C\" void omp_set_num_threads(int);");
  emit_message_helpers(/*maybe_unused=*/false);
  emit_omp_reductions();
  emit_blas_support(/*maybe_unused=*/false);
  w_.line("");
}

// kiln_message (messages of guards and faults) and the dtype names. With `maybe_unused` (a
// standalone kernel header), the functions are `static inline`, which no compiler warns about
// when a translation unit does not call them. kiln_message is cold and never inlined: a module
// calls it from every guard and fault check, and at -O3 each inlined copy of its loops was
// optimized again: a quarter to a third of the sample models' compile time.
void CppSourcePrinter::emit_message_helpers(bool maybe_unused) {
  const std::string storage = maybe_unused ? "static inline " : "static ";
  w_.line("__attribute__((noinline, cold)) " + storage + "void kiln_message(char* out, int64_t capacity, const char* const* parts, const int64_t* ints, int n) {");
  w_.line("  int64_t at = 0;");
  w_.line("  for (int i = 0; i < n; ++i) {");
  w_.line("    char digits[24];");
  w_.line("    const char* text = parts[i];");
  w_.line("    if (text == nullptr) {");
  w_.line("      int64_t v = ints[i];");
  w_.line("      unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;");
  w_.line("      int k = 23;");
  w_.line("      digits[k] = 0;");
  w_.line("      do { digits[--k] = char('0' + u % 10); u /= 10; } while (u);");
  w_.line("      if (v < 0) digits[--k] = '-';");
  w_.line("      text = digits + k;");
  w_.line("    }");
  w_.line("    for (; *text && at + 1 < capacity; ++text) out[at++] = *text;");
  w_.line("  }");
  w_.line("  if (capacity > 0) out[at] = 0;");
  w_.line("}");
  // The names by dtype code (kiln/dtype.h's enum order).
  std::string names;
  for (DType dtype : kAllDTypes) names += (names.empty() ? "\"" : ", \"") + std::string(dtype_name(dtype)) + "\"";
  w_.line(storage + "const char* const kiln_dtype_names[] = {" + names + "};");
  w_.line(storage + "const char* kiln_dtype_name(int32_t code) { return code >= 0 && code < " +
          std::to_string(std::size(kAllDTypes)) + " ? kiln_dtype_names[code] : \"(unknown dtype)\"; }");
}

// The OpenMP reductions of max and min that reduction kernels name in their simd clauses.
void CppSourcePrinter::emit_omp_reductions() {
  w_.line("#pragma omp declare reduction(kiln_max_f32 : float : omp_out = kred_max(omp_out, omp_in)) initializer(omp_priv = -__builtin_inff())");
  w_.line("#pragma omp declare reduction(kiln_min_f32 : float : omp_out = kred_min(omp_out, omp_in)) initializer(omp_priv = __builtin_inff())");
  w_.line("#pragma omp declare reduction(kiln_max_f64 : double : omp_out = kred_max(omp_out, omp_in)) initializer(omp_priv = -__builtin_inf())");
  w_.line("#pragma omp declare reduction(kiln_min_f64 : double : omp_out = kred_min(omp_out, omp_in)) initializer(omp_priv = __builtin_inf())");
}

// The CBLAS declarations and kiln_blas_layout, which GEMM kernels call.
void CppSourcePrinter::emit_blas_support(bool maybe_unused) {
  const std::string storage = maybe_unused ? "static inline " : "static ";
  w_.line("extern \"C\" void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);");
  w_.line("extern \"C\" void cblas_dgemm(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*, int);");
  w_.line("// A row-major matrix with strides (rows, cols) as a CBLAS operand: 0 when it has none.");
  w_.line(storage + "int kiln_blas_layout(int64_t row_stride, int64_t col_stride, int64_t rows, int64_t cols, int* trans, int* ld) {");
  w_.line("  if (col_stride == 1 || cols == 1) {");
  w_.line("    *trans = 111; *ld = int(rows <= 1 ? (cols > 1 ? cols : 1) : row_stride);");
  w_.line("    return rows <= 1 || row_stride >= cols;");
  w_.line("  }");
  w_.line("  if (row_stride == 1 || rows == 1) {");
  w_.line("    *trans = 112; *ld = int(cols <= 1 ? (rows > 1 ? rows : 1) : col_stride);");
  w_.line("    return cols <= 1 || col_stride >= rows;");
  w_.line("  }");
  w_.line("  return 0;");
  w_.line("}");
  // One block of a GEMM (on the thread pool, a task's rows and columns): one row is a GEMV, which
  // reads B once, where GEMM would first pack all of it (a batch-1 linear layer's whole cost).
  w_.line("extern \"C\" void cblas_sgemv(int, int, int, int, float, const float*, int, const float*, int, float, float*, int);");
  w_.line("extern \"C\" void cblas_dgemv(int, int, int, int, double, const double*, int, const double*, int, double, double*, int);");
  w_.line("static inline void kiln_gemv(int trans, int m, int n, const float* a, int lda, const float* x, int incx, float* y) {");
  w_.line("  cblas_sgemv(101, trans, m, n, 1, a, lda, x, incx, 0, y, 1);");
  w_.line("}");
  w_.line("static inline void kiln_gemv(int trans, int m, int n, const double* a, int lda, const double* x, int incx, double* y) {");
  w_.line("  cblas_dgemv(101, trans, m, n, 1, a, lda, x, incx, 0, y, 1);");
  w_.line("}");
  w_.line("static inline void kiln_gemm(int ta, int tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc) {");
  w_.line("  cblas_sgemm(101, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, ldc);");
  w_.line("}");
  w_.line("static inline void kiln_gemm(int ta, int tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb, double* c, int ldc) {");
  w_.line("  cblas_dgemm(101, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, ldc);");
  w_.line("}");
  w_.line("// Rows [0, rows) x columns [n0, n1) of C = A B: A (rows x K) at pa, B (K x N) at pb, C at pc with");
  w_.line("// rows ldc apart (N for a contiguous C); ta, lda, tb, ldb as kiln_blas_layout gives them.");
  w_.line("template <class T>");
  w_.line("static inline void kiln_gemm_block(int ta, int tb, int64_t rows, int64_t n0, int64_t n1, int64_t K, const T* pa, int lda, const T* pb, int ldb, T* pc, int64_t ldc) {");
  w_.line("  if (K <= 0 || rows <= 0 || n1 <= n0) return;");
  w_.line("  const T* pbn = pb + (tb == 111 ? n0 : n0 * ldb);");
  w_.line("  if (rows == 1) {");
  w_.line("    const int incx = ta == 112 ? lda : 1;");
  w_.line("    if (tb == 111) kiln_gemv(112, int(K), int(n1 - n0), pbn, ldb, pa, incx, pc + n0);");
  w_.line("    else kiln_gemv(111, int(n1 - n0), int(K), pbn, ldb, pa, incx, pc + n0);");
  w_.line("    return;");
  w_.line("  }");
  w_.line("  kiln_gemm(ta, tb, int(rows), int(n1 - n0), int(K), pa, lda, pbn, ldb, pc + n0, int(ldc));");
  w_.line("}");
}

void CppSourcePrinter::emit_bind() {
  const size_t n = p_.inputs.size();
  w_.open("extern \"C\" int32_t kiln_abi_version(void)");
  w_.line("return " + std::to_string(kKilnAbiVersion) + ";");
  w_.close();
  w_.open("extern \"C\" int32_t kiln_bind(const KilnTensorDesc* in, int64_t num_inputs, int64_t* sym, char* error, int64_t capacity)");
  w_.open("if (num_inputs != " + std::to_string(n) + ")");
  w_.line("const char* parts[] = {\"guard failed: the model takes " + std::to_string(n) + " inputs, got \", nullptr};");
  w_.line("const int64_t ints[] = {0, num_inputs};");
  w_.line("kiln_message(error, capacity, parts, ints, 2);");
  w_.line("return 1;");
  w_.close();
  for (size_t i = 0; i < n; ++i) {
    const Buffer& b = p_.buffer(p_.inputs[i]);
    const SymShape shape = outside_shape(b, input_slice(i));
    std::string in = "in[" + std::to_string(i) + "]";
    std::string who = "input '" + b.source + "'";
    w_.open("if (" + in + ".dtype != " + std::to_string(int(b.dtype)) + ")");
    w_.line("const char* parts[] = {\"guard failed: " + who + " has dtype \", kiln_dtype_name(" + in +
            ".dtype), \", expected " + std::string(dtype_name(b.dtype)) + "\"};");
    w_.line("kiln_message(error, capacity, parts, nullptr, 3);");
    w_.line("return 1;");
    w_.close();
    w_.open("if (" + in + ".rank != " + std::to_string(shape.size()) + ")");
    w_.line("const char* parts[] = {\"guard failed: " + who + " has rank \", nullptr, \", expected " +
            std::to_string(shape.size()) + " (shape " + ir::shape_string(shape) + ")\"};");
    w_.line("const int64_t ints[] = {0, " + in + ".rank, 0};");
    w_.line("kiln_message(error, capacity, parts, ints, 3);");
    w_.line("return 1;");
    w_.close();
  }
  std::map<std::string, std::string> symbol_origin;
  for (size_t j = 0; j < p_.symbol_sources.size(); ++j) {
    const auto& source = p_.symbol_sources[j];
    size_t position = size_t(std::find(p_.symbols.begin(), p_.symbols.end(), source.symbol) - p_.symbols.begin());
    w_.line("sym[" + std::to_string(position) + "] = in[" + std::to_string(source.input) + "].sizes[" +
            std::to_string(source.dim) + "];");
    symbol_origin[source.symbol] = "input '" + p_.buffer(p_.inputs[size_t(source.input)]).source + "' dim " +
                                   std::to_string(source.dim);
  }
  declare_symbols();
  // Each symbol within its range (the graph signature's: torch.export's range constraints).
  for (const LoopProgram::SymbolRange& range : p_.symbol_ranges) {
    std::string value = symbol_variable(range.symbol);
    std::string text = "[" + std::to_string(range.min) + ", " + (range.max ? std::to_string(*range.max) : std::string("int_oo")) + "]";
    std::string condition = value + " < " + std::to_string(range.min) + (range.max ? " || " + value + " > " + std::to_string(*range.max) : "");
    w_.open("if (" + condition + ")");
    w_.line("const char* parts[] = {\"guard failed: " + symbol_origin[range.symbol] + " is \", nullptr, \", outside the range " + text +
            " of " + range.symbol + " that the model was compiled for\"};");
    w_.line("const int64_t ints[] = {0, " + value + ", 0};");
    w_.line("kiln_message(error, capacity, parts, ints, 3);");
    w_.line("return 1;");
    w_.close();
  }
  for (size_t i = 0; i < n; ++i) {
    const Buffer& b = p_.buffer(p_.inputs[i]);
    const SymShape shape = outside_shape(b, input_slice(i));
    std::string in = "in[" + std::to_string(i) + "]";
    std::string who = "input '" + b.source + "'";
    for (size_t d = 0; d < shape.size(); ++d) {
      const SymInt& size = shape[d];
      std::string got = in + ".sizes[" + std::to_string(d) + "]";
      std::string expected;
      if (size.is_constant()) {
        expected = std::to_string(size.constant());
      } else {
        std::string origin;
        for (const std::string& s : size.free_symbols()) {
          if (symbol_origin.count(s)) origin += (origin.empty() ? "" : ", ") + s + " from " + symbol_origin[s];
        }
        expected = size.to_string() + " = \", nullptr, \" (" + origin + ")";
      }
      w_.open("if (" + got + " != (" + index_text(size) + "))");
      w_.line("const char* parts[] = {\"guard failed: " + who + " dim " + std::to_string(d) + " has size \", nullptr, \", expected " +
              expected + "\"};");
      w_.line("const int64_t ints[] = {0, " + got + ", 0, " + index_text(size) + ", 0};");
      w_.line("kiln_message(error, capacity, parts, ints, " + std::string(size.is_constant() ? "3" : "5") + ");");
      w_.line("return 1;");
      w_.close();
    }
    // Strides: the compiled code assumes contiguous inputs (size-1 dims may have any stride,
    // and an input with no elements any strides).
    SymInt empty_check = 1;
    for (const SymInt& d : shape) empty_check = empty_check * d;
    w_.open("if ((" + index_text(empty_check) + ") != 0)");
    SymInt stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      std::string got = in + ".strides[" + std::to_string(d) + "]";
      w_.open("if (" + in + ".sizes[" + std::to_string(d) + "] != 1 && " + got + " != (" + index_text(stride) + "))");
      w_.line("const char* parts[] = {\"guard failed: " + who + " dim " + std::to_string(d) +
              " has stride \", nullptr, \", expected \", nullptr, \" (the compiled code assumes contiguous inputs)\"};");
      w_.line("const int64_t ints[] = {0, " + got + ", 0, " + index_text(stride) + ", 0};");
      w_.line("kiln_message(error, capacity, parts, ints, 5);");
      w_.line("return 1;");
      w_.close();
      stride = stride * shape[d];
    }
    w_.close();
  }
  w_.line("(void)error; (void)capacity;");
  w_.line("return 0;");
  w_.close();
  w_.line("");
}

std::string CppSourcePrinter::guard_entry_points() {
  w_ = CSourceWriter();
  w_.line("// Size arithmetic of index expressions (Python's floor division and modulo, max, min).");
  w_.line("static inline int64_t kiln_imax(int64_t a, int64_t b) { return a > b ? a : b; }");
  w_.line("static inline int64_t kiln_imin(int64_t a, int64_t b) { return a < b ? a : b; }");
  w_.line("static inline int64_t kiln_floordiv(int64_t a, int64_t b) {");
  w_.line("  int64_t q = a / b;");
  w_.line("  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;");
  w_.line("}");
  w_.line("static inline int64_t kiln_mod(int64_t a, int64_t b) {");
  w_.line("  int64_t r = a % b;");
  w_.line("  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;");
  w_.line("}");
  emit_message_helpers(/*maybe_unused=*/true);
  emit_bind();
  emit_output_sizes();
  return w_.str();
}

std::string emit_cpp_guard_entry_points(const ScheduledProgram& scheduled) {
  return CppSourcePrinter(scheduled, CppEmitOptions{}).guard_entry_points();
}

void CppSourcePrinter::emit_sizes() {
  emit_output_sizes();
  w_.open("extern \"C\" int64_t kiln_workspace_bytes(const int64_t* sym)");
  declare_symbols();
  if (chunked()) {
    w_.line("// One workspace per chunk of the batch (chunks run side by side).");
    w_.line("return " + std::to_string(p_.batch_chunks.chunks) + " * " + chunk_workspace_bytes() + ";");
  } else {
    w_.line("return " + index_text(s_.memory.peak_bytes) + ";");
  }
  w_.close();
  w_.line("");
}

void CppSourcePrinter::emit_output_sizes() {
  w_.open("extern \"C\" void kiln_output_sizes(const int64_t* sym, int64_t* sizes)");
  declare_symbols();
  size_t k = 0;
  for (size_t i = 0; i < p_.outputs.size(); ++i) {
    for (const SymInt& d : outside_shape(p_.buffer(p_.outputs[i]), output_slice(i)))
      w_.line("sizes[" + std::to_string(k++) + "] = " + index_text(d) + ";");
  }
  w_.line("(void)sizes;");
  w_.close();
}

SymShape CppSourcePrinter::outside_shape(const Buffer& b, const BatchSlice& slice) const {
  SymShape shape = b.shape;
  if (slice.dim >= 0) shape[size_t(slice.dim)] = shape[size_t(slice.dim)] * SymInt(p_.batch_chunks.chunks);
  return shape;
}

CppSourcePrinter::ChunkRuns CppSourcePrinter::chunk_runs(const Buffer& b, const BatchSlice& slice) const {
  ChunkRuns runs;
  runs.blocks = slice.outer;
  runs.run = b.shape[size_t(slice.dim)].constant() / slice.outer;
  for (int64_t d = 0; d < slice.dim; ++d) runs.blocks *= b.shape[size_t(d)].constant();
  for (size_t d = size_t(slice.dim) + 1; d < b.shape.size(); ++d) runs.run *= b.shape[d].constant();
  return runs;
}

int64_t CppSourcePrinter::chunk_plan_bytes() {
  std::optional<int64_t> peak = s_.memory.peak_bytes.maybe_constant();
  KILN_CHECK(peak, "a chunked program has a static memory plan");
  return (*peak + 63) / 64 * 64;
}

std::string CppSourcePrinter::chunk_workspace_bytes() {
  int64_t bytes = chunk_plan_bytes();
  auto stage = [&](const Buffer& b, const BatchSlice& slice) {
    if (slice.dim < 0) return;
    const ChunkRuns runs = chunk_runs(b, slice);
    if (runs.blocks > 1) bytes += (runs.blocks * runs.run * int64_t(dtype_size(b.dtype)) + 63) / 64 * 64;
  };
  for (size_t i = 0; i < p_.inputs.size(); ++i) stage(p_.buffer(p_.inputs[i]), input_slice(i));
  for (size_t i = 0; i < p_.outputs.size(); ++i) stage(p_.buffer(p_.outputs[i]), output_slice(i));
  return std::to_string(bytes);
}

void CppSourcePrinter::emit_run() {
  if (chunked()) {
    w_.line("// One chunk of the batch: kiln_run runs it " + std::to_string(p_.batch_chunks.chunks) +
            " times, side by side, each on one thread.");
    w_.open("static int32_t kiln_run_chunk(const KilnRunArgs* args)");
  } else {
    w_.open("extern \"C\" int32_t kiln_run(const KilnRunArgs* args)");
  }
  w_.line("const int64_t* sym = args->symbols;");
  declare_symbols();
  w_.line("void* bufs[" + std::to_string(std::max<size_t>(p_.buffers.size(), 1)) + "] = {};");
  for (size_t i = 0; i < p_.inputs.size(); ++i) {
    w_.line("bufs[" + std::to_string(p_.inputs[i]) + "] = args->inputs[" + std::to_string(i) + "].data;");
  }
  for (size_t i = 0; i < p_.parameters.size(); ++i) {
    w_.line("bufs[" + std::to_string(p_.parameters[i]) + "] = args->parameters[" + std::to_string(i) + "];");
  }
  for (size_t i = 0; i < p_.outputs.size(); ++i) {
    w_.line("bufs[" + std::to_string(p_.outputs[i]) + "] = args->outputs[" + std::to_string(i) + "];");
  }
  for (const auto& [id, offset] : s_.memory.offsets) {
    w_.line("bufs[" + std::to_string(id) + "] = (char*)args->workspace + (" + index_text(offset) + ");  // " +
            p_.buffer(id).name);
  }
  if (!chunked()) {
    w_.line("if (args->num_threads > 0) omp_set_num_threads(args->num_threads);");
    if (uses_pool()) w_.line("kiln_pool_set_threads(args->num_threads > 0 ? args->num_threads : omp_get_max_threads());");
    w_.line("__atomic_store_n(&kiln_fault_zero_division, 0, __ATOMIC_RELAXED);");
    w_.line("__atomic_store_n(&kiln_fault_index, 0, __ATOMIC_RELAXED);");
  }
  emit_inputs_bounded();
  for (size_t index = 0; index < s_.kernels.size(); ++index) {
    const Kernel& kernel = s_.kernels[index];
    if (const SideBySide* group = side_by_side_at(int(index))) {
      emit_side_by_side(*group);
      index += size_t(group->lane0 + group->lane1) - 1;
      continue;
    }
    std::string origins = origins_text(kernel.origins);
    w_.open("");
    w_.line("const int32_t rc = " + kernel.name + "(bufs, sym, args);");
    w_.line("if (rc != 0) return rc;");
    w_.open("if (__atomic_load_n(&kiln_fault_zero_division, __ATOMIC_RELAXED))");
    w_.line("const char* parts[] = {" + quoted("ZeroDivisionError: integer division by zero in " + kernel.name + " (" + origins + ")") + "};");
    w_.line("kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
    w_.line("return 1;");
    w_.close();
    w_.open("if (__atomic_load_n(&kiln_fault_index, __ATOMIC_RELAXED))");
    w_.line("const char* parts[] = {" + quoted("IndexError: an index is out of range in " + kernel.name + " (" + origins + ")") + "};");
    w_.line("kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
    w_.line("return 1;");
    w_.close();
    w_.close();
  }
  w_.line("return 0;");
  w_.close();
  if (chunked()) emit_chunked_run();
}

// The group of kernels side by side that starts at kernel `index`, where this module runs them so:
// with a runner (the pool or OpenMP's team) and not in a chunk of a batch (whose chunks already
// take the threads). Otherwise the kernels run one after another, which computes the same.
const SideBySide* CppSourcePrinter::side_by_side_at(int index) const {
  if (!uses_runner() || chunked()) return nullptr;
  for (const SideBySide& group : s_.side_by_side)
    if (group.first == index) return &group;
  return nullptr;
}

// Two lanes of kernels at once (codegen/schedule_side_by_side.cpp): lane i's kernels in order on
// one thread of the runner, each kernel on that thread alone (as a chunk of a batch runs); with one
// thread, lane 0 then lane 1. The lanes' kernels raise no fault flag (the scheduler keeps such
// kernels out); a library call's failure is reported from the lane's own message buffer.
void CppSourcePrinter::emit_side_by_side(const SideBySide& group) {
  const Kernel& first = s_.kernels[size_t(group.first)];
  const Kernel& second = s_.kernels[size_t(group.first + group.lane0)];
  w_.open("");
  w_.line("// side by side: " + std::to_string(group.lane0) + " kernels from " + first.name + " on one thread, " +
          std::to_string(group.lane1) + " from " + second.name + " on another");
  w_.line("char lane_error[2][1024];");
  w_.line("int32_t lane_rc[2] = {0, 0};");
  w_.open("auto lanes = [&](int64_t begin, int64_t end)");
  w_.line("const int omp_threads = omp_get_max_threads();");
  w_.line("omp_set_num_threads(1);");
  if (uses_pool()) {
    w_.line("const int32_t in_chunk = kiln_pool_in_chunk;");
    w_.line("kiln_pool_in_chunk = 1;");
  }
  w_.open("for (int64_t lane = begin; lane < end; ++lane)");
  w_.line("KilnRunArgs lane_args = *args;");
  w_.line("lane_error[lane][0] = 0;");
  w_.line("lane_args.error = lane_error[lane];");
  w_.line("lane_args.error_capacity = sizeof lane_error[lane];");
  w_.line("int32_t rc = 0;");
  for (int lane = 0; lane < 2; ++lane) {
    w_.open(lane == 0 ? "if (lane == 0)" : "else");
    const int begin = lane == 0 ? group.first : group.first + group.lane0;
    const int end = lane == 0 ? group.first + group.lane0 : group.first + group.lane0 + group.lane1;
    for (int k = begin; k < end; ++k) w_.line("if (rc == 0) rc = " + s_.kernels[size_t(k)].name + "(bufs, sym, &lane_args);");
    w_.close();
  }
  w_.line("lane_rc[lane] = rc;");
  w_.close();
  if (uses_pool()) w_.line("kiln_pool_in_chunk = in_chunk;");
  w_.line("omp_set_num_threads(omp_threads);");
  w_.close(";");
  w_.line(runner() + "(2, lanes);");
  w_.open("for (int lane = 0; lane < 2; ++lane)");
  w_.open("if (lane_rc[lane] != 0)");
  w_.line("const char* parts[] = {lane_error[lane]};");
  w_.line("kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
  w_.line("return lane_rc[lane];");
  w_.close();
  w_.close();
  w_.close();
}

// Sets kiln_inputs_bounded, and kiln_inputs_small where some clamp's bound assumes it
// (codegen/cpp/kiln_dnnl.h), for this call, or this chunk, where a convolution's clamp is oneDNN's
// post-op in bounded calls: whether every element of every f32 and f64 input is within
// +-passes::kBoundedInput (+-passes::kSmallInput), the bound the value bounds assume. One pass
// over each input finds its largest magnitude.
void CppSourcePrinter::emit_inputs_bounded() {
  if (!checks_bounded_inputs_ && !checks_small_inputs_) return;
  char bound[32], small[32];
  std::snprintf(bound, sizeof bound, "%a", passes::kBoundedInput);
  std::snprintf(small, sizeof small, "%a", passes::kSmallInput);
  w_.line("// Whether this call's floating-point inputs are within +-" + std::string(bound) +
          (checks_small_inputs_ ? " (and +-" + std::string(small) + ")" : std::string()) + " (NaN is not): the value bounds that let a");
  w_.line("// convolution's clamp be oneDNN's post-op hold then (passes/value_bounds.h).");
  w_.line("int inputs_bounded = 1;");
  if (checks_small_inputs_) w_.line("int inputs_small = 1;");
  // The bits of a bound's magnitude in the input's dtype, as an unsigned literal.
  auto bits_of = [](double value, DType dtype) {
    char text[32];
    if (dtype == DType::f32) {
      const float f = float(value);
      uint32_t b = 0;
      std::memcpy(&b, &f, sizeof b);
      std::snprintf(text, sizeof text, "0x%08xu", unsigned(b));
    } else {
      uint64_t b = 0;
      std::memcpy(&b, &value, sizeof b);
      std::snprintf(text, sizeof text, "0x%016llxull", static_cast<unsigned long long>(b));
    }
    return std::string(text);
  };
  auto decide = [&](DType dtype, bool shared) {
    const std::string store_bounded = shared ? "__atomic_store_n(&inputs_bounded, 0, __ATOMIC_RELAXED);" : "inputs_bounded = 0;";
    const std::string store_small = shared ? "__atomic_store_n(&inputs_small, 0, __ATOMIC_RELAXED);" : "inputs_small = 0;";
    w_.line("if (largest > " + bits_of(passes::kBoundedInput, dtype) + ") " + store_bounded + "  // past " + bound);
    if (checks_small_inputs_)
      w_.line("if (largest > " + bits_of(passes::kSmallInput, dtype) + ") " + store_small + "  // past " + small);
  };
  for (int id : p_.inputs) {
    const Buffer& input = p_.buffer(id);
    if (input.dtype != DType::f32 && input.dtype != DType::f64) continue;
    const std::string type = input.dtype == DType::f32 ? "float" : "double";
    const std::string bits = input.dtype == DType::f32 ? "uint32_t" : "uint64_t";
    const std::string count = index_text(numel(input.shape));
    w_.open("if (inputs_bounded)");
    w_.line("const " + type + "* in = (const " + type + "*)bufs[" + std::to_string(id) + "];");
    if (!uses_runner()) {
      w_.line("const " + bits + " largest = kiln_largest_magnitude_bits(in, " + count + ");");
      decide(input.dtype, false);
      w_.close();
      continue;
    }
    // Shared among the module's threads where the input is large (an image: 150528 floats took
    // 25 us on one thread, MobileNet-v2's whole call 2.9 ms).
    w_.open("auto kiln_within = [&](int64_t begin, int64_t end)");
    w_.line("const " + bits + " largest = kiln_largest_magnitude_bits(in + begin, end - begin);");
    decide(input.dtype, true);
    w_.close(";");
    w_.line(runner() + "(" + count + ", kiln_within, (" + count + ") >= " + std::to_string(options_.parallel_threshold) + ");");
    w_.close();
  }
  w_.line("kiln_inputs_bounded = inputs_bounded;");
  if (checks_small_inputs_) w_.line("kiln_inputs_small = inputs_small;");
}

// kiln_run of a chunked program: chunk i reads its slice of each chunked input and writes its
// slice of each output (where the slice is one block of memory, in place; else copied through
// staging memory after the chunk's memory plan), in a workspace of the running thread's own. The
// chunks are the pool's job, so each runs on one thread, and inside it every loop, GEMM and
// library call runs on that thread alone (kiln_pool_in_chunk, one OpenMP thread). The first chunk
// that fails reports.
void CppSourcePrinter::emit_chunked_run() {
  const int64_t chunks = p_.batch_chunks.chunks;
  KILN_CHECK(uses_pool(), "a chunked program runs its chunks on the module's pool");
  w_.open("extern \"C\" int32_t kiln_run(const KilnRunArgs* args)");
  w_.line("const int64_t* sym = args->symbols;");
  declare_symbols();
  w_.line("if (args->num_threads > 0) omp_set_num_threads(args->num_threads);");
  w_.line("kiln_pool_set_threads(args->num_threads > 0 ? args->num_threads : omp_get_max_threads());");
  w_.line("__atomic_store_n(&kiln_fault_zero_division, 0, __ATOMIC_RELAXED);");
  w_.line("__atomic_store_n(&kiln_fault_index, 0, __ATOMIC_RELAXED);");
  w_.line("int32_t failed = 0;");
  w_.line("// Bit i: workspace i is free. A thread takes the lowest free one, so that chunks run one");
  w_.line("// after another reuse a workspace still in the caches.");
  w_.line("uint64_t free_workspaces = " + std::string(chunks >= 64 ? "~0ull" : "(1ull << " + std::to_string(chunks) + ") - 1") + ";");
  w_.open("kiln_parallel_for(" + std::to_string(chunks) + ", [&](int64_t begin, int64_t end)");
  w_.line("uint64_t free_now = __atomic_load_n(&free_workspaces, __ATOMIC_ACQUIRE);");
  w_.line("int64_t workspace = 0;");
  w_.open("for (;;)");
  w_.line("workspace = __builtin_ctzll(free_now);");
  w_.line("if (__atomic_compare_exchange_n(&free_workspaces, &free_now, free_now & ~(1ull << workspace), false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) break;");
  w_.close();
  w_.line("char* chunk_workspace = (char*)args->workspace + workspace * " + chunk_workspace_bytes() + ";");
  w_.line("const int omp_threads = omp_get_max_threads();");
  w_.line("omp_set_num_threads(1);");
  w_.line("kiln_pool_in_chunk = 1;");
  w_.open("for (int64_t chunk = begin; chunk < end && !__atomic_load_n(&failed, __ATOMIC_RELAXED); ++chunk)");
  // Where each input and output of the chunk lies: an offset into the whole tensor, or staging
  // memory after the memory plan (copies of `blocks` runs, the chunk's run of each block).
  int64_t staged_at = chunk_plan_bytes();
  struct Staged {
    std::string whole;  // the whole tensor's pointer, as text
    std::string staging;
    ChunkRuns runs;
    size_t element_bytes;
  };
  std::vector<Staged> staged_outputs;
  auto place = [&](const Buffer& b, const BatchSlice& slice, const std::string& whole, const std::string& target,
                   bool input) {
    if (slice.dim < 0) return;
    const ChunkRuns runs = chunk_runs(b, slice);
    const size_t element_bytes = dtype_size(b.dtype);
    const std::string run_bytes = std::to_string(runs.run * int64_t(element_bytes));
    if (runs.blocks == 1) {
      w_.line(target + " = (char*)" + whole + " + chunk * " + run_bytes + ";");
      return;
    }
    const std::string staging = "(chunk_workspace + " + std::to_string(staged_at) + ")";
    staged_at += (runs.blocks * runs.run * int64_t(element_bytes) + 63) / 64 * 64;
    w_.line(target + " = " + staging + ";");
    if (input) {
      w_.line("for (int64_t block = 0; block < " + std::to_string(runs.blocks) + "; ++block)");
      w_.line("  __builtin_memcpy(" + staging + " + block * " + run_bytes + ", (const char*)" + whole + " + (block * " +
              std::to_string(chunks) + " + chunk) * " + run_bytes + ", " + run_bytes + ");");
    } else {
      staged_outputs.push_back({whole, staging, runs, element_bytes});
    }
  };
  const size_t inputs = std::max<size_t>(p_.inputs.size(), 1), outputs = std::max<size_t>(p_.outputs.size(), 1);
  w_.line("KilnTensorDesc inputs[" + std::to_string(inputs) + "];");
  for (size_t i = 0; i < p_.inputs.size(); ++i) {
    const std::string at = "inputs[" + std::to_string(i) + "]";
    w_.line(at + " = args->inputs[" + std::to_string(i) + "];");
    place(p_.buffer(p_.inputs[i]), input_slice(i), "args->inputs[" + std::to_string(i) + "].data", at + ".data", true);
  }
  w_.line("void* outputs[" + std::to_string(outputs) + "];");
  for (size_t i = 0; i < p_.outputs.size(); ++i) {
    place(p_.buffer(p_.outputs[i]), output_slice(i), "args->outputs[" + std::to_string(i) + "]",
          "outputs[" + std::to_string(i) + "]", false);
  }
  w_.line("char error[1024];");
  w_.line("KilnRunArgs part = *args;");
  w_.line("part.inputs = inputs;");
  w_.line("part.outputs = outputs;");
  w_.line("part.workspace = chunk_workspace;");
  w_.line("part.error = error;");
  w_.line("part.error_capacity = sizeof error;");
  w_.open("if (kiln_run_chunk(&part) != 0)");
  w_.line("int32_t first = 0;");
  w_.open("if (__atomic_compare_exchange_n(&failed, &first, 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))");
  w_.line("const char* parts[] = {error};");
  w_.line("kiln_message(args->error, args->error_capacity, parts, nullptr, 1);");
  w_.close();
  w_.line("continue;");
  w_.close();
  for (const Staged& out : staged_outputs) {
    const std::string run_bytes = std::to_string(out.runs.run * int64_t(out.element_bytes));
    w_.line("for (int64_t block = 0; block < " + std::to_string(out.runs.blocks) + "; ++block)");
    w_.line("  __builtin_memcpy((char*)" + out.whole + " + (block * " + std::to_string(chunks) + " + chunk) * " + run_bytes +
            ", " + out.staging + " + block * " + run_bytes + ", " + run_bytes + ");");
  }
  w_.close();
  w_.line("kiln_pool_in_chunk = 0;");
  w_.line("omp_set_num_threads(omp_threads);");
  w_.line("__atomic_fetch_or(&free_workspaces, 1ull << workspace, __ATOMIC_RELEASE);");
  w_.close(");");
  w_.line("return failed;");
  w_.close();
}

}  // namespace kiln::codegen

// The C++ backend's reduction kernels (codegen/cpp/cpp_source_printer.h lists the printer's
// parts): OpenMP over the outer point, and per Reduce step `lanes` accumulators (16, one for a
// short row) that an `omp simd` loop over chunks of the row's last dim fills, a tail loop after
// it, then the lanes combined into the step's results. Sums, products, max/min (NaN sticks),
// argmax/argmin (the first index of the best value; NaN counts as best) and Welford statistics
// (one count per chunk, so one reciprocal per chunk). A whole-tensor float reduction splits its
// row across threads and lets OpenMP combine their lanes. Long f32 sums accumulate in f64.
#include <functional>
#include <map>
#include <set>

#include "codegen/cpp/cpp_source_printer.h"
#include "codegen/index_analysis.h"
#include "kiln/error.h"

namespace kiln::codegen {

CppSourcePrinter::ReduceStepText CppSourcePrinter::reduce_step_text(const Kernel& kernel, const KernelStep& step,
                                                                    int number) {
  ReduceStepText r;
  r.kind = step.reduction;
  r.at = accumulation_dtype(kernel, step);
  r.t = ctype(r.at);
  r.n = std::to_string(number);
  // A short innermost row (a pooling window) gets one lane: sixteen lanes would cost more to
  // set up and combine than the row itself.
  const bool short_row = !kernel.inner.empty() && kernel.inner.back().is_constant() &&
                         kernel.inner.back().constant() < kLanes;
  r.lanes = short_row ? 1 : kLanes;
  r.L = std::to_string(r.lanes);
  r.L1 = std::to_string(r.lanes + 1);
  r.arg = r.kind == ReductionKind::ArgMax || r.kind == ReductionKind::ArgMin;
  r.welford = r.kind == ReductionKind::Welford;
  r.acc = "acc" + r.n;
  r.idx = "idx" + r.n;
  r.mean = "mean" + r.n;
  r.m2 = "m2" + r.n;
  r.cnt = "cnt" + r.n;
  return r;
}

void CppSourcePrinter::emit_reduce_step(const Kernel& kernel, const KernelStep& step, int number) {
  const ReduceStepText r = reduce_step_text(kernel, step, number);
  w_.line("// reduce " + std::string(r.welford ? "welford" : r.arg ? "arg" : "") + ": " +
          p_.nodes[size_t(step.node)].name);
  declare_reduction_lanes(r);
  std::vector<SymInt> rvars;
  for (size_t k = 0; k < kernel.inner.size(); ++k) rvars.push_back(reduction_var(k));
  const std::string flat = index_text(flat_index(rvars, kernel.inner));
  w_.open("");
  if (kernel.inner.empty()) {
    emit_reduction_combine(step, r, "0", flat);
  } else {
    emit_reduction_loops(kernel, step, r, flat, 0);
  }
  w_.close();
  combine_reduction_lanes(step, r);
}

void CppSourcePrinter::declare_reduction_lanes(const ReduceStepText& r) {
  const std::string& t = r.t;
  const std::string& L = r.L;
  const std::string& L1 = r.L1;
  if (r.welford) {
    // Lanes 0..L-1 see the same count in the main loop (one reciprocal per chunk, not one
    // division per element); lane L takes the tail.
    w_.line(t + " " + r.mean + "[" + L1 + "], " + r.m2 + "[" + L1 + "], " + r.cnt + "[" + L1 + "];");
    w_.line("for (int l = 0; l <= " + L + "; ++l) { " + r.mean + "[l] = 0; " + r.m2 + "[l] = 0; " + r.cnt +
            "[l] = 0; }");
    w_.line(t + " wn" + r.n + " = 0;");
    return;
  }
  w_.line(t + " " + r.acc + "[" + L + "];");
  w_.line("for (int l = 0; l < " + L + "; ++l) " + r.acc + "[l] = " + reduction_identity(r) + ";");
  if (r.arg) {
    w_.line("int64_t " + r.idx + "[" + L + "];");
    w_.line("for (int l = 0; l < " + L + "; ++l) " + r.idx + "[l] = -1;");
  }
}

std::string CppSourcePrinter::reduction_identity(const ReduceStepText& r) {
  switch (r.kind) {
    case ReductionKind::Sum: return literal(0, 0, r.at);
    case ReductionKind::Prod: return literal(1, 1, r.at);
    case ReductionKind::Max:
    case ReductionKind::ArgMax: return lowest(r.at);
    case ReductionKind::Min:
    case ReductionKind::ArgMin: return highest(r.at);
    case ReductionKind::Welford: break;
  }
  return "";
}

bool CppSourcePrinter::stashes_short_row(const KernelStep& step, const ReduceStepText& r) {
  if (r.lanes != 1 || step.stash_buffer < 0 || r.arg || r.welford) return false;
  if (p_.buffer(step.stash_buffer).dtype != r.at) return false;  // read back, the value must be exact
  bool reads_stash = false;
  visit(step.body, [&](const ExprNode& node) { reads_stash |= node.kind == ExprKind::Load && node.buffer == step.stash_buffer; });
  return !reads_stash;
}

void CppSourcePrinter::emit_reduction_combine(const KernelStep& step, const ReduceStepText& r, const std::string& lane,
                                              const std::string& flat, const std::string& stashed) {
  const std::string& n = r.n;
  const std::string& t = r.t;
  const std::string& acc = r.acc;
  std::string v = "e" + n;
  w_.line("const " + t + " " + v + " = " + (stashed.empty() ? expr(step.body) : stashed) + ";");
  switch (r.kind) {
    case ReductionKind::Sum: w_.line(acc + "[" + lane + "] = kop_add(" + acc + "[" + lane + "], " + v + ");"); break;
    case ReductionKind::Prod: w_.line(acc + "[" + lane + "] = kop_mul(" + acc + "[" + lane + "], " + v + ");"); break;
    case ReductionKind::Max: w_.line(acc + "[" + lane + "] = kred_max(" + acc + "[" + lane + "], " + v + ");"); break;
    case ReductionKind::Min: w_.line(acc + "[" + lane + "] = kred_min(" + acc + "[" + lane + "], " + v + ");"); break;
    case ReductionKind::ArgMax:
    case ReductionKind::ArgMin: {
      std::string a = acc + "[" + lane + "]", i = r.idx + "[" + lane + "]";
      std::string better = r.kind == ReductionKind::ArgMax ? "(" + v + " > " + a + ")" : "(" + v + " < " + a + ")";
      w_.line("const bool take" + n + " = " + i + " < 0 || " + better + " || (" + v + " != " + v + " && " + a +
              " == " + a + ");");
      w_.line(a + " = take" + n + " ? " + v + " : " + a + ";");
      w_.line(i + " = take" + n + " ? int64_t(" + flat + ") : " + i + ";");
      break;
    }
    case ReductionKind::Welford: {
      bool main_loop = lane == "l";
      std::string slot = main_loop ? lane : r.L;
      std::string me = r.mean + "[" + slot + "]", m = r.m2 + "[" + slot + "]", c = r.cnt + "[" + slot + "]";
      w_.line("const " + t + " d" + n + " = " + v + " - " + me + ";");
      if (main_loop) {
        w_.line(c + " = wn" + n + ";");
        w_.line(me + " += d" + n + " * winv" + n + ";");
      } else {
        w_.line(c + " += " + t + "(1);");
        w_.line(me + " += d" + n + " / " + c + ";");
      }
      w_.line(m + " += d" + n + " * (" + v + " - " + me + ");");
      break;
    }
  }
  if (step.stash_buffer >= 0 && stashed.empty())
    w_.line(buf(step.stash_buffer) + "[" + index_text(step.stash_index) + "] = " + v + ";");
}

void CppSourcePrinter::emit_reduction_loops(const Kernel& kernel, const KernelStep& step, const ReduceStepText& r,
                                            const std::string& flat, size_t dim) {
  if (dim + 1 == kernel.inner.size()) {
    emit_reduction_row(kernel, step, r, flat);
    return;
  }
  std::string var = reduction_var(dim).to_string();
  w_.open("for (int64_t " + var + " = 0; " + var + " < " + index_text(kernel.inner[dim]) + "; ++" + var + ")");
  emit_reduction_loops(kernel, step, r, flat, dim + 1);
  w_.close();
}

void CppSourcePrinter::emit_reduction_row(const Kernel& kernel, const KernelStep& step, const ReduceStepText& r,
                                          const std::string& flat) {
  const std::string& n = r.n;
  const std::string& L = r.L;
  const size_t last = kernel.inner.size() - 1;
  const std::string rv = reduction_var(last).to_string(), rl = "rl" + n, rn = "rn" + n;
  w_.line("const int64_t " + rn + " = " + index_text(kernel.inner[last]) + ";");
  w_.line("int64_t " + rl + " = 0;");
  if (std::string op = split_reduction_operator(kernel, step); !op.empty()) {
    emit_split_reduction_row(step, r, op, flat, rv);
    return;
  }
  if (stashes_short_row(step, r)) {
    // A short row whose values are stashed (softmax's exp): the values in one vectorizable loop
    // into the stash, then reduced from it in order, one lane: the same values in the same order.
    // In one loop, GCC vectorized the values' math with an in-order sum and Clang left it scalar
    // (the MLP sample's softmax over 10 classes: 2.6 us with g++, 3.7 with Clang; split, 2.3 and
    // 1.9). The stash is the step's own output, so the next loop reads only what this one wrote.
    const std::string stash = buf(step.stash_buffer) + "[" + index_text(step.stash_index) + "]";
    w_.line("#pragma omp simd");
    w_.open("for (int64_t " + rv + " = 0; " + rv + " < " + rn + "; ++" + rv + ")");
    w_.line(stash + " = " + expr(step.body) + ";");
    w_.close();
    w_.open("for (; " + rl + " < " + rn + "; ++" + rl + ")");
    w_.line("const int64_t " + rv + " = " + rl + ";");
    emit_reduction_combine(step, r, "0", flat, stash);
    w_.close();
    return;
  }
  if (vector_max_min(step, r)) {
    emit_vector_max_min_row(kernel, step, r, rv);
  } else {
    w_.open("for (; " + rl + " + " + L + " <= " + rn + "; " + rl + " += " + L + ")");
    if (&step == prefetching_step_ && r.lanes == kLanes) emit_next_row_prefetches(kernel, rl, r.lanes);
    emit_reduction_chunk(step, r, flat, rv);
    w_.close();
  }
  emit_overlapped_tail_chunk(kernel, step, r, rv);
  w_.open("for (; " + rl + " < " + rn + "; ++" + rl + ")");
  w_.line("const int64_t " + rv + " = " + rl + ";");
  emit_reduction_combine(step, r, "0", flat);
  w_.close();
}

// The rest of a row past its last whole chunk (ViT's softmax rows of 197: 5 elements) as one more
// chunk, the row's last L elements, each lane taking only an element the chunks before did not:
// element by element the rest cost a scalar exp each, a third of that softmax's time. Every element
// the chunk reads is in the row; an element it takes again is computed and dropped (its lane keeps
// its accumulator, a stash keeps its value). Sums, products, maxima and minima, whose lanes take
// any elements; a row shorter than a chunk keeps the loop below.
void CppSourcePrinter::emit_overlapped_tail_chunk(const Kernel& kernel, const KernelStep& step, const ReduceStepText& r,
                                                  const std::string& rv) {
  if (r.lanes != kLanes || r.welford || r.arg) return;
  // A row of a known length has a rest only when it is no multiple of the chunk.
  if (std::optional<int64_t> length = kernel.inner.back().maybe_constant(); length && (*length % kLanes == 0 || *length < kLanes))
    return;
  const std::string& n = r.n;
  const std::string rl = "rl" + n, rn = "rn" + n, fresh = "fresh" + n, v = "e" + n;
  w_.open("if (" + rl + " < " + rn + " && " + rn + " >= " + r.L + ")");
  w_.line("#pragma omp simd");
  w_.open("for (int l = 0; l < " + r.L + "; ++l)");
  w_.line("const int64_t " + rv + " = " + rn + " - " + r.L + " + l;");
  w_.line("const bool " + fresh + " = " + rv + " >= " + rl + ";");
  w_.line("const " + r.t + " " + v + " = " + expr(step.body) + ";");
  const std::string a = r.acc + "[l]";
  const char* op = r.kind == ReductionKind::Sum    ? "kop_add"
                   : r.kind == ReductionKind::Prod ? "kop_mul"
                   : r.kind == ReductionKind::Max  ? "kred_max"
                                                   : "kred_min";
  w_.line(a + " = " + fresh + " ? " + op + "(" + a + ", " + v + ") : " + a + ";");
  if (step.stash_buffer >= 0) {
    const std::string stash = buf(step.stash_buffer) + "[" + index_text(step.stash_index) + "]";
    w_.line(stash + " = " + fresh + " ? " + v + " : " + stash + ";");
  }
  w_.close();
  w_.line(rl + " = " + rn + ";");
  w_.close();
}

// One chunk of L elements of the row: each combined into its own lane.
void CppSourcePrinter::emit_reduction_chunk(const KernelStep& step, const ReduceStepText& r, const std::string& flat,
                                            const std::string& rv) {
  const std::string& n = r.n;
  const std::string rl = "rl" + n;
  if (r.welford) {
    w_.line("wn" + n + " += " + r.t + "(1);");
    w_.line("const " + r.t + " winv" + n + " = " + r.t + "(1) / wn" + n + ";");
  }
  w_.line("#pragma omp simd");
  w_.open("for (int l = 0; l < " + r.L + "; ++l)");
  w_.line("const int64_t " + rv + " = " + rl + " + l;");
  emit_reduction_combine(step, r, "l", flat);
  w_.close();
}

bool CppSourcePrinter::vector_max_min(const KernelStep& step, const ReduceStepText& r) {
  return (r.kind == ReductionKind::Max || r.kind == ReductionKind::Min) && r.at == DType::f32 && r.lanes == kLanes &&
         kLanes == 16 && step.stash_buffer < 0;
}

// The lanes of an f32 max or min as one vector of 16 (GCC's and Clang's vector extension) across
// the chunks of the row: each chunk's values computed into an array by an `omp simd` loop, then
// combined with the lanes by one compare and blend. Sixteen lanes in an array, combined inside the
// simd loop, came out of Clang as pieces of 2, 2, 4 and 8 lanes (20 instructions per chunk where
// one compare, one blend and a load do; softmax's max pass over 4096x1024 floats, one thread:
// 2.30 -> 2.08 ms, and 2.24 -> 2.06 ms with GCC). NaNs are kept beside the lanes, each lane's last
// one, and put back after the row: taken into the accumulator, a NaN test on its chain made each
// chunk wait for the one before (a compare, a mask or and a blend in a row), where a plain better-or-
// keep is one max instruction (softmax 4096x1024, 2 threads: 0.889 -> 0.796 ms). The same lanes see
// the same values: the results are the array form's.
void CppSourcePrinter::emit_vector_max_min_row(const Kernel& kernel, const KernelStep& step, const ReduceStepText& r,
                                               const std::string& rv) {
  const std::string& n = r.n;
  const std::string rl = "rl" + n, rn = "rn" + n, vacc = "vacc" + n, vnan = "vnan" + n, chunk = "chunk" + n,
                    values = "values" + n;
  const std::string better = r.kind == ReductionKind::Max ? " > " : " < ";
  w_.open("");
  w_.line("kiln_f32x16 " + vacc + ";");
  w_.line("__builtin_memcpy(&" + vacc + ", " + r.acc + ", sizeof " + vacc + ");");
  w_.line("kiln_f32x16 " + vnan + " = " + vacc + ";");
  w_.open("for (; " + rl + " + 16 <= " + rn + "; " + rl + " += 16)");
  if (&step == prefetching_step_) emit_next_row_prefetches(kernel, rl, r.lanes);
  w_.line("float " + values + "[16];");
  w_.line("#pragma omp simd");
  w_.open("for (int l = 0; l < 16; ++l)");
  w_.line("const int64_t " + rv + " = " + rl + " + l;");
  w_.line(values + "[l] = " + expr(step.body) + ";");
  w_.close();
  w_.line("kiln_f32x16 " + chunk + ";");
  w_.line("__builtin_memcpy(&" + chunk + ", " + values + ", sizeof " + chunk + ");");
  // kred_max's rule, lane by lane: a NaN value is taken, a NaN lane stays. A NaN lane of vacc
  // stays by itself (no value compares better); a NaN value waits in vnan.
  w_.line(vacc + " = (" + chunk + better + vacc + ") ? " + chunk + " : " + vacc + ";");
  w_.line(vnan + " = (" + chunk + " != " + chunk + ") ? " + chunk + " : " + vnan + ";");
  w_.close();
  w_.line(vacc + " = (" + vnan + " != " + vnan + ") ? " + vnan + " : " + vacc + ";");
  w_.line("__builtin_memcpy(" + r.acc + ", &" + vacc + ", sizeof " + vacc + ");");
  w_.close();
}

// A whole-tensor reduction: no outer loop to share out, so the threads split the row. Through
// the module's runner: the row's chunks of L elements fall into at most one part per thread
// (kKilnSplitParts at most), each part reduces into its own lanes, and the parts' lanes are
// combined into the step's in part order afterwards (one part, the row in order, when the row is
// under the parallel threshold). In a standalone header: OpenMP's reduction clause.
void CppSourcePrinter::emit_split_reduction_row(const KernelStep& step, const ReduceStepText& r, const std::string& op,
                                                const std::string& flat, const std::string& rv) {
  const std::string& L = r.L;
  const std::string rl = "rl" + r.n, rn = "rn" + r.n, chunks = "chunks" + r.n;
  const std::string threshold = std::to_string(options_.parallel_threshold);
  w_.line("const int64_t " + chunks + " = " + rn + " / " + L + ";");
  auto chunk_loop = [&](const std::string& from, const std::string& to) {
    w_.open("for (int64_t c = " + from + "; c < " + to + "; ++c)");
    w_.line("#pragma omp simd");
    w_.open("for (int l = 0; l < " + L + "; ++l)");
    w_.line("const int64_t " + rv + " = c * " + L + " + l;");
    emit_reduction_combine(step, r, "l", flat);
    w_.close();
    w_.close();
  };
  if (!uses_runner()) {
    w_.line("#pragma omp parallel for schedule(static) reduction(" + op + ":" + r.acc + "[:" + L + "]) if(" + rn +
            " >= " + threshold + ")");
    chunk_loop("0", chunks);
  } else {
    constexpr int kKilnSplitParts = 64;
    const std::string parts = "parts" + r.n, lanes = "part_lanes" + r.n, limit = std::to_string(kKilnSplitParts);
    w_.open("");
    w_.line("const int64_t " + parts + " = " + rn + " < " + threshold + " ? 1 : " + runner_threads() + " < " + limit +
            " ? " + runner_threads() + " : " + limit + ";");
    w_.line(r.t + " " + lanes + "[" + limit + "][" + L + "];");
    w_.open("auto kiln_parts = [&](int64_t p0, int64_t p1)");
    w_.open("for (int64_t p = p0; p < p1; ++p)");
    // The part's own lanes, under the step's name, so the combine text is the row loop's.
    w_.line(r.t + " " + r.acc + "[" + L + "];");
    w_.line("for (int l = 0; l < " + L + "; ++l) " + r.acc + "[l] = " + reduction_identity(r) + ";");
    chunk_loop(chunks + " * p / " + parts, chunks + " * (p + 1) / " + parts);
    w_.line("for (int l = 0; l < " + L + "; ++l) " + lanes + "[p][l] = " + r.acc + "[l];");
    w_.close();
    w_.close(";");
    w_.line(runner() + "(" + parts + ", kiln_parts, " + parts + " > 1);");
    const char* merge = r.kind == ReductionKind::Sum    ? "kop_add"
                        : r.kind == ReductionKind::Prod ? "kop_mul"
                        : r.kind == ReductionKind::Max  ? "kred_max"
                                                        : "kred_min";
    w_.line("for (int64_t p = 0; p < " + parts + "; ++p)");
    w_.line("  for (int l = 0; l < " + L + "; ++l) " + r.acc + "[l] = " + merge + "(" + r.acc + "[l], " + lanes +
            "[p][l]);");
    w_.close();
  }
  w_.line(rl + " = " + chunks + " * " + L + ";");
  w_.open("for (; " + rl + " < " + rn + "; ++" + rl + ")");
  w_.line("const int64_t " + rv + " = " + rl + ";");
  emit_reduction_combine(step, r, "0", flat);
  w_.close();
}

// Rows of 4 KB (softmax over 1024 floats) are a page each, and the L2 streamer prefetches
// within a page only: without these each row's first pass waited on DRAM, and a row's passes
// never overlapped the next row's reads (softmax 4096x1024, one thread: 2.52 -> 2.29 ms).
// A prefetch never faults, so the address past the last row needs no guard; it is computed as
// an integer, never as an out-of-range pointer.
void CppSourcePrinter::emit_next_row_prefetches(const Kernel& kernel, const std::string& chunk_start, int lanes) {
  if (kernel.outer.empty() || kernel.inner.empty()) return;
  // The next row waits in L2 while this one is reduced: rows of up to 16K elements (64 KB of
  // f32; a longer one could push out its own prefetched lines before they are read).
  constexpr int64_t kMaxRowElements = 16 * 1024;
  const SymInt row_elements = numel(kernel.inner);
  std::string guard;
  if (std::optional<int64_t> known = row_elements.maybe_constant()) {
    if (*known > kMaxRowElements) return;
  } else {
    guard = "if ((" + index_text(row_elements) + ") <= " + std::to_string(kMaxRowElements) + ") ";
  }
  const SymInt outer_var = loop_var(kernel.outer.size() - 1), row_var = reduction_var(kernel.inner.size() - 1);
  std::set<int> stashes, seen;
  for (const KernelStep& step : kernel.steps)
    if (step.stash_buffer >= 0) stashes.insert(step.stash_buffer);
  const std::map<std::string, SymInt> next_row = {{outer_var.to_string(), outer_var + SymInt(1)},
                                                  {row_var.to_string(), SymInt::symbol(chunk_start)}};
  for (const KernelStep& step : kernel.steps) {
    visit(step.body, [&](const ExprNode& node) {
      if (node.kind != ExprKind::Load || registers_.count(node.buffer) || !node.indirect.empty() || node.mask ||
          stashes.count(node.buffer) || seen.count(node.buffer)) {
        return;
      }
      std::optional<AffineIndex> form = affine_form(node.index, {outer_var, row_var});
      if (!form || !(form->coefficients[1] == SymInt(1)) || form->coefficients[0] == SymInt(0)) return;
      seen.insert(node.buffer);
      const int64_t bytes = int64_t(dtype_size(node.dtype)) * lanes;
      const std::string base = "(uintptr_t)" + buf(node.buffer) + " + (uintptr_t)(" +
                               index_text(node.index.substitute(next_row)) + ") * sizeof(*" + buf(node.buffer) + ")";
      for (int64_t line = 0; line < bytes; line += 64) {
        w_.line(guard + "__builtin_prefetch((const void*)(" + base + (line ? " + " + std::to_string(line) : "") + "));");
      }
    });
  }
}

void CppSourcePrinter::combine_reduction_lanes(const KernelStep& step, const ReduceStepText& r) {
  const std::string& t = r.t;
  const std::string& L = r.L;
  const std::string& acc = r.acc;
  const std::string& idx = r.idx;
  std::string result = "res" + r.n;
  switch (r.kind) {
    case ReductionKind::Sum:
    case ReductionKind::Prod:
    case ReductionKind::Max:
    case ReductionKind::Min: {
      const char* op = r.kind == ReductionKind::Sum    ? "kop_add"
                       : r.kind == ReductionKind::Prod ? "kop_mul"
                       : r.kind == ReductionKind::Max  ? "kred_max"
                                                       : "kred_min";
      // The lanes combine as a tree of pairs (their count is a power of two): lane after lane, each
      // step waited on the one before, 15 in a row for 16 lanes, twice a row in a softmax (a
      // third of its time over rows of 128).
      if (r.lanes > 1) {
        w_.line("for (int w = " + L + " / 2; w > 0; w /= 2) for (int l = 0; l < w; ++l) " + acc + "[l] = " + op + "(" +
                acc + "[l], " + acc + "[l + w]);");
      }
      w_.line(t + " " + result + " = " + acc + "[0];");
      store_reduction(step, {result}, r.at);
      break;
    }
    case ReductionKind::ArgMax:
    case ReductionKind::ArgMin: {
      std::string bv = "bv" + r.n;
      w_.line(t + " " + bv + " = " + acc + "[0];");
      w_.line("int64_t " + result + " = " + idx + "[0];");
      std::string cmp = r.kind == ReductionKind::ArgMax ? ">" : "<";
      w_.open("for (int l = 1; l < " + L + "; ++l)");
      w_.line("if (" + idx + "[l] < 0) continue;");
      w_.line("const " + t + " c = " + acc + "[l];");
      w_.line("const bool c_nan = c != c, b_nan = " + bv + " != " + bv + ";");
      w_.line("const bool better = " + result + " < 0 || (c " + cmp + " " + bv + ") || (c_nan && !b_nan) || ((c == " +
              bv + " || (c_nan && b_nan)) && " + idx + "[l] < " + result + ");");
      w_.line("if (better) { " + bv + " = c; " + result + " = " + idx + "[l]; }");
      w_.close();
      w_.line("if (" + result + " < 0) " + result + " = 0;");
      store_reduction(step, {result}, DType::i64);
      break;
    }
    case ReductionKind::Welford: {
      std::string rm = "rm" + r.n, rq = "rq" + r.n, rc = "rc" + r.n, wn = "wn" + r.n;
      w_.line(t + " " + rm + " = 0, " + rq + " = 0, " + rc + " = 0;");
      // Lanes 0..L-1 hold wn values each (the main loop), so they combine without a division: their
      // mean is the mean of theirs (each scaled first, so that no sum of huge means overflows), their
      // M2 the lanes' own plus wn times the spread of their means about it. Lane by lane, Chan's
      // update took a division and waited on the lane before: 16 in a row per row, most of a
      // layer norm's time over rows of 96 to 768 (ConvNeXt's, a ViT's). PyTorch's Welford mean, as
      // Chan's update lane by lane did, turns an infinite mean into NaN when any value (a lane)
      // follows it: only the last lane's may stay infinite (`followed`).
      w_.open("if (" + wn + " > 0)");
      // (Each sum over the lanes as a tree of pairs, which the compilers unroll: a plain loop waited
      // on each addition in turn. An `omp simd` reduction did the same, but under -fopenmp it made
      // GCC misjudge the tail loop's trip count, -Waggressive-loop-optimizations, in a kernel header.)
      auto tree_sum = [&](const std::string& lanes) {
        w_.line("for (int w = " + L + " / 2; w > 0; w /= 2) for (int l = 0; l < w; ++l) " + lanes + "[l] += " + lanes +
                "[l + w];");
      };
      w_.line(t + " means[" + L + "], spreads[" + L + "], withins[" + L + "];");
      w_.line("int followed = 0;");
      w_.open("for (int l = 0; l < " + L + "; ++l)");
      w_.line("means[l] = " + r.mean + "[l] * (" + t + "(1) / " + t + "(" + L + "));");
      w_.line("followed |= int(l + 1 < " + L + " && !(" + r.mean + "[l] - " + r.mean + "[l] == 0));");
      w_.close();
      tree_sum("means");
      w_.line("const " + t + " lane_mean = means[0];");
      w_.open("for (int l = 0; l < " + L + "; ++l)");
      w_.line("const " + t + " away = " + r.mean + "[l] - lane_mean;");
      w_.line("spreads[l] = away * away;");
      w_.line("withins[l] = " + r.m2 + "[l];");
      w_.close();
      tree_sum("spreads");
      tree_sum("withins");
      w_.line(rm + " = followed ? " + t + "(__builtin_nan(\"\")) : lane_mean;");
      w_.line(rq + " = withins[0] + " + wn + " * spreads[0];");
      w_.line(rc + " = " + wn + " * " + t + "(" + L + ");");
      w_.close();
      // Then the tail's lane, by Chan's update. Alone, it is taken as it is: folding it into the
      // empty state would multiply an overflowed delta * delta by a zero count (NaN, where the
      // statistics are inf).
      const std::string tm = r.mean + "[" + L + "]", tq = r.m2 + "[" + L + "]", tc = r.cnt + "[" + L + "]";
      w_.open("if (" + tc + " != 0 && " + rc + " == 0)");
      w_.line(rm + " = " + tm + ";");
      w_.line(rq + " = " + tq + ";");
      w_.line(rc + " = " + tc + ";");
      w_.close();
      w_.open("else if (" + tc + " != 0)");
      w_.line("const " + t + " total = " + rc + " + " + tc + ";");
      w_.line("const " + t + " delta = " + tm + " - " + rm + ";");
      w_.line(rm + " += delta * " + tc + " / total;");
      w_.line(rq + " += " + tq + " + delta * delta * " + rc + " * " + tc + " / total;");
      w_.line(rc + " = total;");
      w_.close();
      // The mean of no values is NaN, as PyTorch's (var then divides 0 by 0: NaN too).
      w_.line("if (" + rc + " == 0) " + rm + " = __builtin_nan(\"\");");
      store_reduction(step, {rm, rq}, r.at);
      break;
    }
  }
}

void CppSourcePrinter::emit_reduction_kernel(const Kernel& kernel) {
  if (is_column_reduction(kernel)) {
    emit_column_reduction_kernel(kernel);
    return;
  }
  SymInt work = numel(kernel.outer) * numel(kernel.inner);
  const size_t rank = kernel.outer.size();
  prefetching_step_ = nullptr;
  for (const KernelStep& step : kernel.steps)
    if (step.kind == KernelStep::Kind::Reduce && rank > 0) prefetching_step_ = &step;
  auto body = [&] {
    int number = 0;
    for (const KernelStep& step : kernel.steps) {
      switch (step.kind) {
        case KernelStep::Kind::Reduce: emit_reduce_step(kernel, step, number); break;
        case KernelStep::Kind::StoreInner: emit_row_step(kernel, step, number); break;
        case KernelStep::Kind::StoreOuter: emit_point_step(step, number); break;
      }
      ++number;
    }
  };
  if (rank == 0) {
    w_.open("");
    body();
    w_.close();
    return;
  }
  parallel_loops(work, loop_dims(kernel.outer, rank), rank >= 2 ? " collapse(" + std::to_string(rank) + ")" : "", false,
                 body);
  prefetching_step_ = nullptr;
}

// Long f32 sums and Welford statistics accumulate in f64 lanes (the interpreter sums in
// double; a 16M-element f32 sum would otherwise drift by ~1e-5 relative). Rows up to 16K
// elements (softmax, layer_norm) keep f32 lanes: 1K additions per lane lose nothing visible.
DType CppSourcePrinter::accumulation_dtype(const Kernel& kernel, const KernelStep& step) {
  std::optional<int64_t> row_length = numel(kernel.inner).maybe_constant();
  bool widen = step.body->dtype == DType::f32 &&
               (step.reduction == ReductionKind::Sum || step.reduction == ReductionKind::Welford) &&
               !(row_length && *row_length <= kLanes * 1024);
  return widen ? DType::f64 : step.body->dtype;
}

// The OpenMP reduction operator that lets a whole-tensor float reduction (no outer range, one
// row dim) split its row across threads; empty when the step cannot split.
std::string CppSourcePrinter::split_reduction_operator(const Kernel& kernel, const KernelStep& step) {
  if (!kernel.outer.empty() || kernel.inner.size() != 1 || step.stash_buffer >= 0) return "";
  const DType t = accumulation_dtype(kernel, step);
  if (t != DType::f32 && t != DType::f64) return "";
  switch (step.reduction) {
    case ReductionKind::Sum: return "+";
    case ReductionKind::Prod: return "*";
    case ReductionKind::Max: return t == DType::f32 ? "kiln_max_f32" : "kiln_max_f64";
    case ReductionKind::Min: return t == DType::f32 ? "kiln_min_f32" : "kiln_min_f64";
    default: return "";
  }
}

void CppSourcePrinter::store_reduction(const KernelStep& step, const std::vector<std::string>& values, DType from) {
  KILN_CHECK(values.size() == step.outputs.size(), "reduction outputs and values disagree");
  for (size_t i = 0; i < values.size(); ++i) {
    int b = step.outputs[i];
    DType to = p_.buffer(b).dtype;
    if (registers_.count(b)) {
      w_.line("const " + ctype(to) + " " + reg(b) + " = " + convert(values[i], from, to) + ";");
    } else {
      w_.line(buf(b) + "[" + index_text(step.store_index) + "] = " + convert(values[i], from, to) + ";");
    }
  }
}

}  // namespace kiln::codegen

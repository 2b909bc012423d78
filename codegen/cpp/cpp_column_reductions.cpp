// The C++ backend's column reductions (codegen/cpp/cpp_source_printer.h lists the printer's
// parts): a reduction kernel whose values lie side by side along the last outer dim, not along
// the row — a pooling window or a global pool over a channels-last value, a sum over the rows of
// a matrix, the statistics of an instance or group norm over a channels-last value — reduces a
// block of up to kColumnBlock outer points at once: one accumulator per point of the block, the
// reduction loops outside, and an `omp simd` loop over the block innermost, so every load is a
// contiguous vector. The row form (cpp_reductions.cpp) would read one strided element per lane and
// keep a single accumulator for a 3x3 window. A Welford step keeps a mean and an M2 per point and
// one count for the block (every point sees the same rows), so each point's statistics are one
// sequential Welford pass over its values, as PyTorch's over a row. A reduction that reads
// another's result (softmax's or logsumexp's sum of exp(x - max) over a middle dim: over the
// classes of an NCHW segmentation map) runs in a later pass over the block's rows, each lane
// reading its own point's result; a step that stores each element of the rows (softmax's
// quotient) runs in a last pass, after the reductions.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "codegen/cpp/cpp_source_printer.h"
#include "codegen/index_analysis.h"
#include "kiln/error.h"

namespace kiln::codegen {

namespace {

constexpr int kColumnBlock = 64;  // outer points per block: 4 AVX-512 registers of f32
constexpr int64_t kMaxColumnStride = 4;  // the lanes' step through the input: a pool's stride
constexpr int64_t kShortRow = 8;         // a row this short fills no vector of the row form

// The coefficient of `var` in `index`, or nullopt when the index is not affine in the variables.
std::optional<SymInt> coefficient(const SymInt& index, const std::vector<SymInt>& vars, size_t which) {
  std::optional<AffineIndex> form = affine_form(index, vars);
  if (!form) return std::nullopt;
  return form->coefficients[which];
}

bool mentions(const Expr& e, const SymInt& var) {
  bool found = false;
  map_indices(e, [&](const SymInt& index) {
    found = found || depends_on(index, var);
    return index;
  });
  return found;
}

}  // namespace

// The masks of masked loads (and the conditions of wheres) that do not depend on `var` (a pooling window's bounds: the same
// for every channel) become values computed once before the loop over `var`, so that the loop
// holds no condition of its own and vectorizes (GCC keeps a conditional load inside a loop
// scalar, but unswitches a loop on an invariant bool).
Expr CppSourcePrinter::hoist_invariant_masks(const Expr& e, const SymInt& var,
                                             std::vector<std::pair<std::string, Expr>>& hoisted) {
  if (!e) return e;
  auto node = std::make_shared<ExprNode>(*e);
  auto hoist = [&](const Expr& condition) {
    std::string name = "m" + std::to_string(hoist_counter_++);
    hoisted.push_back({name, condition});
    return named_value(name, DType::boolean);
  };
  if (node->kind == ExprKind::Load && node->mask && !mentions(node->mask, var)) node->mask = hoist(node->mask);
  // An inlined masked read: where(mask, value, other).
  if (node->kind == ExprKind::Where && node->args[0]->kind != ExprKind::Load && !mentions(node->args[0], var)) {
    node->args[0] = hoist(node->args[0]);
  }
  for (Expr& arg : node->args) arg = hoist_invariant_masks(arg, var, hoisted);
  return node;
}

bool CppSourcePrinter::is_column_reduction(const Kernel& kernel) {
  const size_t rank = kernel.outer.size();
  if (rank == 0 || kernel.inner.empty()) return false;
  std::vector<SymInt> vars = loop_vars(rank);
  for (size_t k = 0; k < kernel.inner.size(); ++k) vars.push_back(reduction_var(k));
  const size_t last_outer = rank - 1, last_inner = vars.size() - 1;
  bool strided_row = false, strided_outer = false;
  std::set<int> made;  // buffers this kernel writes
  for (const KernelStep& step : kernel.steps) {
    for (int b : step.outputs) made.insert(b);
  }
  std::set<int> reduced;  // registers of the reduction steps before the step looked at
  std::set<int> stored;   // buffers of the steps that store every element of the rows
  std::set<int> pointed;  // registers of the point steps before the step looked at
  for (const KernelStep& step : kernel.steps) {
    if (step.kind == KernelStep::Kind::StoreOuter) {
      for (int b : step.outputs)
        if (registers_.count(b)) pointed.insert(b);
    }
    if (step.kind == KernelStep::Kind::StoreInner) {
      // In the last pass: it reads the results of the reductions and point steps before it
      // (log_softmax's log of the sum), and no other step reads what it stores.
      for (int b : step.outputs) {
        if (registers_.count(b)) return false;
        stored.insert(b);
      }
      bool reads_reductions_only = true;
      visit(step.body, [&](const ExprNode& node) {
        if (node.kind == ExprKind::Load && registers_.count(node.buffer) && !reduced.count(node.buffer) &&
            !pointed.count(node.buffer))
          reads_reductions_only = false;
      });
      if (!reads_reductions_only) return false;
    }
    // A point step may come between reductions (a mean stored before a variance's reduction):
    // every reduction runs in the block's rows, every point step after them, in order, since no
    // reduction reads what the kernel makes.
    if (step.kind == KernelStep::Kind::Reduce) {
      bool plain = step.reduction == ReductionKind::Sum || step.reduction == ReductionKind::Max ||
                   step.reduction == ReductionKind::Min || step.reduction == ReductionKind::Welford;
      if (!plain) return false;
      // A stash (softmax's exp, kept for the row step of the last pass): stored per lane, each
      // lane its own point's.
      if (step.stash_buffer >= 0) {
        std::optional<SymInt> along = coefficient(step.stash_index, vars, last_outer);
        if (step.reduction == ReductionKind::Welford || !along || !(*along == SymInt(1))) return false;
      }
    }
    // Unit (or no) stride along the last outer dim everywhere; a reduction reads made values never.
    bool ok = true;
    visit(step.body, [&](const ExprNode& node) {
      if (!ok || node.kind != ExprKind::Load || registers_.count(node.buffer)) return;
      if (step.kind == KernelStep::Kind::Reduce && made.count(node.buffer)) ok = false;
      // (a row step may read the element it stores: a stash in its output's place)
      const bool own_element = step.kind == KernelStep::Kind::StoreInner && node.index == step.store_index &&
                               std::find(step.outputs.begin(), step.outputs.end(), node.buffer) != step.outputs.end();
      if (stored.count(node.buffer) && !own_element) ok = false;
      if (!node.indirect.empty()) ok = false;
      std::optional<SymInt> along_outer = coefficient(node.index, vars, last_outer);
      std::optional<int64_t> outer_stride = along_outer ? along_outer->maybe_constant() : std::nullopt;
      if (!outer_stride || *outer_stride < 0 || *outer_stride > kMaxColumnStride) ok = false;
      if (outer_stride && *outer_stride > 1) strided_outer = true;
      if (step.kind == KernelStep::Kind::Reduce) {
        std::optional<SymInt> along_row = coefficient(node.index, vars, last_inner);
        if (along_row && !(*along_row == SymInt(1)) && !(*along_row == SymInt(0))) strided_row = true;
      }
    });
    if (step.kind == KernelStep::Kind::Reduce) {
      // Of the registers, only an earlier plain reduction's result (read in a later pass).
      visit(step.body, [&](const ExprNode& node) {
        if (node.kind == ExprKind::Load && registers_.count(node.buffer) && !reduced.count(node.buffer)) ok = false;
      });
      if (step.reduction != ReductionKind::Welford) {
        for (int b : step.outputs)
          if (registers_.count(b)) reduced.insert(b);
      }
    }
    if (!ok) return false;
    std::optional<SymInt> store = coefficient(step.store_index, vars, last_outer);
    if (!store || !(*store == SymInt(1))) return false;
  }
  // A short row (a 2x2 window over an NCHW value) fills no vector in the row form; the lanes read
  // every other element instead.
  std::optional<int64_t> row = kernel.inner.back().maybe_constant();
  if (strided_outer && !(row && *row < kShortRow)) return false;
  return strided_row || (row && *row < kShortRow);
}

void CppSourcePrinter::emit_column_reduction_kernel(const Kernel& kernel) {
  const size_t rank = kernel.outer.size();
  const std::string B = std::to_string(kColumnBlock);
  const std::string last = loop_var(rank - 1).to_string(), extent = index_text(kernel.outer[rank - 1]);
  SymInt work = numel(kernel.outer) * numel(kernel.inner);
  std::vector<LoopDim> dims = loop_dims(kernel.outer, rank - 1);
  dims.push_back({"cb", extent, kColumnBlock});
  const std::vector<int> passes = column_passes(kernel);
  const int reduction_passes = passes.empty() ? 1 : *std::max_element(passes.begin(), passes.end()) + 1;
  const bool stores_rows = std::any_of(kernel.steps.begin(), kernel.steps.end(), [](const KernelStep& step) {
    return step.kind == KernelStep::Kind::StoreInner;
  });
  const int pass_count = reduction_passes + (stores_rows ? 1 : 0);
  if (pass_count == 1 && emit_column_reduction_in_parts(kernel, dims, work)) return;
  w_.line("// column reduction: " + B + " points of " + last + " at once" +
          (pass_count > 1 ? ", in " + std::to_string(pass_count) + " passes over the rows" : ""));
  parallel_loops(work, dims, " collapse(" + std::to_string(rank) + ")", false, [&] {
    std::vector<ReduceStepText> texts = declare_column_lanes(kernel);
    for (int pass = 0; pass < reduction_passes; ++pass)
      emit_column_rows(kernel, texts, "0", index_text(kernel.inner[0]), passes, pass);
    if (stores_rows) emit_column_stores(kernel, texts);
    emit_column_results(kernel, texts);
  });
}

// The last pass over a block's rows: the steps that store every element of them, each lane with
// its own point's reduction results. What a step computes once per point (softmax's reciprocal
// of the sum), and the point steps' results (log_softmax's log of the sum), are computed per lane
// before the rows, as the row form hoists them out of its row.
void CppSourcePrinter::emit_column_stores(const Kernel& kernel, const std::vector<ReduceStepText>& texts) {
  const std::string last = loop_var(kernel.outer.size() - 1).to_string(), B = std::to_string(kColumnBlock);
  std::vector<const KernelStep*> reductions;
  std::vector<KernelStep> stores;  // with the per-point values hoisted out of their bodies
  std::vector<std::pair<std::string, Expr>> hoisted;
  std::vector<std::pair<int, Expr>> pointed;  // point steps' registers and what they hold
  for (const KernelStep& step : kernel.steps) {
    if (step.kind == KernelStep::Kind::Reduce) reductions.push_back(&step);
    if (step.kind == KernelStep::Kind::StoreOuter) {
      for (int b : step.outputs)
        if (registers_.count(b)) pointed.push_back({b, step.body});
    }
    if (step.kind != KernelStep::Kind::StoreInner) continue;
    stores.push_back(step);
    stores.back().body = hoist_row_invariants(step.body, kernel.inner.size(), hoisted);
  }
  // In a lanes loop: the reductions' results that `exprs` read, at the lane's point.
  auto define_results = [&](const std::vector<Expr>& exprs) {
    std::set<int> read;
    for (const Expr& e : exprs)
      visit(e, [&](const ExprNode& node) {
        if (node.kind == ExprKind::Load) read.insert(node.buffer);
      });
    for (size_t i = 0; i < texts.size(); ++i) {
      const int b = reductions[i]->outputs.at(0);
      if (!texts[i].welford && read.count(b)) w_.line(lane_result(texts[i], b));
    }
  };
  auto open_lanes = [&] {
    w_.line("#pragma omp simd");
    w_.open("for (int64_t j = 0; j < cn; ++j)");
    w_.line("const int64_t " + last + " = cb + j;");
  };
  if (!hoisted.empty() || !pointed.empty()) {
    std::vector<Expr> values;
    for (const auto& [b, value] : pointed) {
      w_.line(ctype(p_.buffer(b).dtype) + " " + reg(b) + "_lanes[" + B + "];");
      values.push_back(value);
    }
    for (const auto& [name, value] : hoisted) {
      w_.line(ctype(value->dtype) + " " + name + "_lanes[" + B + "];");
      values.push_back(value);
    }
    open_lanes();
    define_results(values);
    for (const auto& [b, value] : pointed) {
      const DType to = p_.buffer(b).dtype;
      w_.line("const " + ctype(to) + " " + reg(b) + " = " + convert(expr(value), value->dtype, to) + ";");
      w_.line(reg(b) + "_lanes[j] = " + reg(b) + ";");
    }
    for (const auto& [name, value] : hoisted) w_.line(name + "_lanes[j] = " + expr(value) + ";");
    w_.close();
  }
  for (size_t k = 0; k < kernel.inner.size(); ++k) {
    const std::string var = reduction_var(k).to_string();
    w_.open("for (int64_t " + var + " = 0; " + var + " < " + index_text(kernel.inner[k]) + "; ++" + var + ")");
  }
  open_lanes();
  std::vector<Expr> bodies;
  for (const KernelStep& step : stores) bodies.push_back(step.body);
  define_results(bodies);
  for (const auto& [b, value] : pointed) {
    bool read = false;
    for (const Expr& body : bodies)
      visit(body, [&](const ExprNode& node) { read = read || (node.kind == ExprKind::Load && node.buffer == b); });
    if (read) w_.line("const " + ctype(p_.buffer(b).dtype) + " " + reg(b) + " = " + reg(b) + "_lanes[j];");
  }
  for (const auto& [name, value] : hoisted) w_.line("const " + ctype(value->dtype) + " " + name + " = " + name + "_lanes[j];");
  size_t next = 0;
  for (size_t number = 0; number < kernel.steps.size(); ++number) {
    if (kernel.steps[number].kind != KernelStep::Kind::StoreInner) continue;
    w_.line("// row: " + p_.nodes[size_t(kernel.steps[number].node)].name);
    emit_point_step(stores.at(next++), int(number));
  }
  w_.close();
  for (size_t k = 0; k < kernel.inner.size(); ++k) w_.close();
}

std::string CppSourcePrinter::lane_result(const ReduceStepText& r, int buffer) {
  const DType to = p_.buffer(buffer).dtype;
  return "const " + ctype(to) + " " + reg(buffer) + " = " + convert(r.acc + "[j]", r.at, to) + ";";
}

std::vector<int> CppSourcePrinter::column_passes(const Kernel& kernel) {
  std::map<int, int> pass_of_register;  // a reduction's result -> its pass
  std::vector<int> passes;
  for (const KernelStep& step : kernel.steps) {
    if (step.kind != KernelStep::Kind::Reduce) continue;
    int pass = 0;
    visit(step.body, [&](const ExprNode& node) {
      if (node.kind != ExprKind::Load) return;
      auto found = pass_of_register.find(node.buffer);
      if (found != pass_of_register.end()) pass = std::max(pass, found->second + 1);
    });
    for (int b : step.outputs)
      if (registers_.count(b)) pass_of_register[b] = pass;
    passes.push_back(pass);
  }
  return passes;
}

// A column reduction of few blocks and long rows (a global average pool of 32 channels over a
// 112x112 image at batch 1: one block, 12544 rows) would run on one thread: each block's rows are
// split into one part per thread instead, each part reduced into its own lanes, and the parts'
// lanes merged per block in part order afterwards, on the calling thread (so the result depends on
// the thread count as the whole-tensor reductions' do, not on the schedule). Through the module's
// runner only; false where the kernel does not qualify.
bool CppSourcePrinter::emit_column_reduction_in_parts(const Kernel& kernel, const std::vector<LoopDim>& dims,
                                                      const SymInt& work) {
  constexpr int64_t kMaxBlocks = 8;     // more blocks than this keep the threads busy as blocks
  constexpr int64_t kMinRows = 256;     // rows of the first reduction dim worth a part each
  constexpr int64_t kMaxParts = 16;
  if (!uses_runner() || kernel.inner.empty()) return false;
  std::optional<int64_t> rows = kernel.inner[0].maybe_constant();
  std::optional<int64_t> total = work.maybe_constant();
  int64_t blocks = 1;
  for (size_t d = 0; d < kernel.outer.size(); ++d) {
    std::optional<int64_t> size = kernel.outer[d].maybe_constant();
    if (!size) return false;
    blocks *= d + 1 == kernel.outer.size() ? (*size + kColumnBlock - 1) / kColumnBlock : *size;
  }
  if (!rows || *rows < kMinRows || !total || *total < options_.parallel_threshold || blocks > kMaxBlocks) return false;
  const std::string B = std::to_string(kColumnBlock), max_parts = std::to_string(kMaxParts);
  const std::string count = std::to_string(blocks), rows_text = std::to_string(*rows);
  // Each block's outer variables and `cb` from its index, the last dim fastest.
  auto locate_block = [&](const std::string& index) {
    w_.line("int64_t kiln_rest = " + index + ";");
    for (size_t i = dims.size(); i-- > 0;) {
      const LoopDim& d = dims[i];
      const std::string n = "((" + d.extent + " + " + std::to_string(d.step - 1) + ") / " + std::to_string(d.step) + ")";
      const std::string scale = d.step == 1 ? "" : " * " + std::to_string(d.step);
      w_.line("const int64_t " + d.var + " = (kiln_rest % " + n + ")" + scale + ";");
      w_.line("kiln_rest /= " + n + ";");
    }
    w_.line("(void)kiln_rest;");
  };
  w_.line("// column reduction: " + B + " points of " + loop_var(kernel.outer.size() - 1).to_string() + " at once, " +
          count + " block(s), each block's " + rows_text + " rows in one part per thread");
  w_.open("");
  w_.line("const int64_t kiln_parts = " + runner_threads() + " < " + max_parts + " ? " + runner_threads() + " : " +
          max_parts + ";");
  // The parts' lanes: [block * kiln_parts + part][lane] per reduction step (sum, max, min, or
  // a Welford step's means and M2s, and its count per part: the column reductions,
  // is_column_reduction).
  const std::string slots = std::to_string(blocks * kMaxParts);
  const std::vector<int> one_pass(column_passes(kernel).size(), 0);
  int number = -1;  // the step's index: its locals' suffix
  for (const KernelStep& step : kernel.steps) {
    ++number;
    if (step.kind != KernelStep::Kind::Reduce) continue;
    ReduceStepText r = reduce_step_text(kernel, step, number);
    if (step.reduction == ReductionKind::Welford) {
      w_.line(r.t + " kiln_part_means" + r.n + "[" + slots + "][" + B + "], kiln_part_m2s" + r.n + "[" + slots + "][" +
              B + "], kiln_part_counts" + r.n + "[" + slots + "];");
    } else {
      w_.line(r.t + " kiln_part_lanes" + r.n + "[" + slots + "][" + B + "];");
    }
  }
  w_.open("auto kiln_chunk = [&](int64_t kiln_begin, int64_t kiln_end)");
  w_.open("for (int64_t kiln_task = kiln_begin; kiln_task < kiln_end; ++kiln_task)");
  // The part slowest: a thread's contiguous range of tasks is every block of its part, the same
  // rows for all of them (whole rows of the input, the threads' shares equal).
  w_.line("const int64_t kiln_part = kiln_task / " + count + ";");
  locate_block("kiln_task % " + count);
  std::vector<ReduceStepText> texts = declare_column_lanes(kernel);
  emit_column_rows(kernel, texts, rows_text + " * kiln_part / kiln_parts", rows_text + " * (kiln_part + 1) / kiln_parts",
                   one_pass, 0);
  const std::string slot = "[(kiln_task % " + count + ") * kiln_parts + kiln_part]";
  for (const ReduceStepText& r : texts) {
    if (r.welford) {
      w_.line("for (int64_t j = 0; j < cn; ++j) kiln_part_means" + r.n + slot + "[j] = " + r.mean + "[j];");
      w_.line("for (int64_t j = 0; j < cn; ++j) kiln_part_m2s" + r.n + slot + "[j] = " + r.m2 + "[j];");
      w_.line("kiln_part_counts" + r.n + slot + " = wn" + r.n + ";");
    } else {
      w_.line("for (int64_t j = 0; j < cn; ++j) kiln_part_lanes" + r.n + slot + "[j] = " + r.acc + "[j];");
    }
  }
  w_.close();
  w_.close(";");
  w_.line(runner() + "(" + count + " * kiln_parts, kiln_chunk, kiln_parts > 1);");
  w_.open("for (int64_t kiln_block = 0; kiln_block < " + count + "; ++kiln_block)");
  locate_block("kiln_block");
  texts = declare_column_lanes(kernel);
  for (const ReduceStepText& r : texts) {
    if (r.welford) {
      merge_welford_parts(r);
      continue;
    }
    const char* merge = r.kind == ReductionKind::Sum ? "kop_add" : r.kind == ReductionKind::Max ? "kred_max" : "kred_min";
    w_.line("for (int64_t p = 0; p < kiln_parts; ++p)");
    w_.line("  for (int64_t j = 0; j < cn; ++j) " + r.acc + "[j] = " + merge + "(" + r.acc + "[j], kiln_part_lanes" +
            r.n + "[kiln_block * kiln_parts + p][j]);");
  }
  emit_column_results(kernel, texts);
  w_.close();
  w_.close();
  return true;
}

// A Welford step's statistics of the parts of block `kiln_block`, merged in part order by Chan's
// update into the lanes declare_column_lanes declared; a part of no rows is skipped.
void CppSourcePrinter::merge_welford_parts(const ReduceStepText& r) {
  const std::string& t = r.t;
  const std::string slot = "[kiln_block * kiln_parts + p]", wn = "wn" + r.n;
  w_.open("for (int64_t p = 0; p < kiln_parts; ++p)");
  w_.line("const " + t + " count = kiln_part_counts" + r.n + slot + ";");
  w_.line("if (count == 0) continue;");
  w_.open("if (" + wn + " == 0)");
  w_.line("for (int64_t j = 0; j < cn; ++j) { " + r.mean + "[j] = kiln_part_means" + r.n + slot + "[j]; " + r.m2 +
          "[j] = kiln_part_m2s" + r.n + slot + "[j]; }");
  w_.close();
  w_.open("else");
  w_.line("const " + t + " total = " + wn + " + count;");
  w_.open("for (int64_t j = 0; j < cn; ++j)");
  w_.line("const " + t + " delta = kiln_part_means" + r.n + slot + "[j] - " + r.mean + "[j];");
  w_.line(r.mean + "[j] += delta * count / total;");
  w_.line(r.m2 + "[j] += kiln_part_m2s" + r.n + slot + "[j] + delta * delta * " + wn + " * count / total;");
  w_.close();
  w_.close();
  w_.line(wn + " += count;");
  w_.close();
}

// `cn`, the points of the block from `cb`, and the lanes of each reduction step.
std::vector<CppSourcePrinter::ReduceStepText> CppSourcePrinter::declare_column_lanes(const Kernel& kernel) {
  const size_t rank = kernel.outer.size();
  const std::string B = std::to_string(kColumnBlock);
  const std::string extent = index_text(kernel.outer[rank - 1]);
  w_.line("const int64_t cn = " + extent + " - cb < " + B + " ? " + extent + " - cb : " + B + ";");
  int number = -1;  // the step's index: its locals' suffix
  std::vector<ReduceStepText> texts;
  for (const KernelStep& step : kernel.steps) {
    ++number;
    if (step.kind != KernelStep::Kind::Reduce) continue;
    ReduceStepText r = reduce_step_text(kernel, step, number);
    r.lanes = kColumnBlock;
    r.L = B;
    w_.line("// reduce" + std::string(r.welford ? " welford, a point per lane" : "") + ": " +
            p_.nodes[size_t(step.node)].name);
    if (r.welford) {
      // A mean and an M2 per point; the count of rows seen, the same for every point.
      w_.line(r.t + " " + r.mean + "[" + B + "], " + r.m2 + "[" + B + "];");
      w_.line("for (int l = 0; l < " + B + "; ++l) { " + r.mean + "[l] = 0; " + r.m2 + "[l] = 0; }");
      w_.line(r.t + " wn" + r.n + " = 0;");
    } else {
      declare_reduction_lanes(r);
    }
    texts.push_back(r);
  }
  return texts;
}

// The reduction loops of a block for the reduction steps of pass `pass` (column_passes), the first
// reduction dim over [first_begin, first_end), every lane of the block innermost; the results of
// earlier passes that those steps read are each lane's own point's.
void CppSourcePrinter::emit_column_rows(const Kernel& kernel, const std::vector<ReduceStepText>& texts,
                                        const std::string& first_begin, const std::string& first_end,
                                        const std::vector<int>& passes, int pass) {
  const size_t rank = kernel.outer.size();
  const std::string last = loop_var(rank - 1).to_string();
  for (size_t k = 0; k < kernel.inner.size(); ++k) {
    std::string var = reduction_var(k).to_string();
    const std::string begin = k == 0 ? first_begin : "0", end = k == 0 ? first_end : index_text(kernel.inner[k]);
    w_.open("for (int64_t " + var + " = " + begin + "; " + var + " < " + end + "; ++" + var + ")");
  }
  std::vector<std::pair<std::string, Expr>> hoisted;
  std::vector<KernelStep> reductions;  // texts' steps, in order
  std::set<int> read;                  // the buffers this pass's steps load
  for (const KernelStep& step : kernel.steps) {
    if (step.kind != KernelStep::Kind::Reduce) continue;
    reductions.push_back(step);
    if (passes.at(reductions.size() - 1) != pass) continue;
    reductions.back().body = hoist_invariant_masks(reductions.back().body, loop_var(rank - 1), hoisted);
    visit(reductions.back().body, [&](const ExprNode& node) {
      if (node.kind == ExprKind::Load) read.insert(node.buffer);
    });
  }
  // A Welford step's count and its reciprocal, once per row for the whole block.
  for (size_t i = 0; i < texts.size(); ++i) {
    const ReduceStepText& r = texts[i];
    if (!r.welford || passes[i] != pass) continue;
    w_.line("wn" + r.n + " += " + r.t + "(1);");
    w_.line("const " + r.t + " winv" + r.n + " = " + r.t + "(1) / wn" + r.n + ";");
  }
  auto lanes_loop = [&] {
    w_.line("#pragma omp simd");
    w_.open("for (int64_t j = 0; j < cn; ++j)");
    w_.line("const int64_t " + last + " = cb + j;");
    // The earlier passes' results this one reads, at the lane's point.
    for (size_t i = 0; i < texts.size(); ++i) {
      const int b = reductions[i].outputs.at(0);
      if (passes[i] < pass && !texts[i].welford && read.count(b)) w_.line(lane_result(texts[i], b));
    }
    for (size_t i = 0; i < texts.size(); ++i) {
      const ReduceStepText& r = texts[i];
      if (passes[i] != pass) continue;
      if (!r.welford) {
        emit_reduction_combine(reductions[i], r, "j", "0");
        continue;
      }
      const std::string e = "e" + r.n, d = "d" + r.n, mean = r.mean + "[j]";
      w_.line("const " + r.t + " " + e + " = " + expr(reductions[i].body) + ";");
      w_.line("const " + r.t + " " + d + " = " + e + " - " + mean + ";");
      w_.line(mean + " += " + d + " * winv" + r.n + ";");
      w_.line(r.m2 + "[j] += " + d + " * (" + e + " - " + mean + ");");
    }
    w_.close();
  };
  if (hoisted.size() == 1) {
    // One invariant mask (a window's bounds): a loop where it holds and one where it does not,
    // each with the mask a constant, since GCC keeps a loop with a conditional load scalar.
    const auto& [name, mask] = hoisted.front();
    w_.open("if (" + expr(mask) + ")");
    w_.line("const bool " + name + " = true;");
    lanes_loop();
    w_.close();
    w_.open("else");
    w_.line("const bool " + name + " = false;");
    lanes_loop();
    w_.close();
  } else {
    for (const auto& [name, mask] : hoisted) w_.line("const bool " + name + " = " + expr(mask) + ";");
    lanes_loop();
  }
  for (size_t k = 0; k < kernel.inner.size(); ++k) w_.close();
}

// The results and the pointwise steps, per point of the block.
void CppSourcePrinter::emit_column_results(const Kernel& kernel, const std::vector<ReduceStepText>& texts) {
  const std::string last = loop_var(kernel.outer.size() - 1).to_string();
  w_.line("#pragma omp simd");
  w_.open("for (int64_t j = 0; j < cn; ++j)");
  w_.line("const int64_t " + last + " = cb + j;");
  int number = 0;
  size_t reduced = 0;  // the next reduction's text
  for (const KernelStep& step : kernel.steps) {
    if (step.kind == KernelStep::Kind::StoreInner) {  // in emit_column_stores
      ++number;
      continue;
    }
    if (step.kind == KernelStep::Kind::Reduce) {
      const ReduceStepText& r = texts.at(reduced++);
      if (r.welford) {
        // The mean of no values is NaN, as PyTorch's (var then divides 0 by 0: NaN too).
        store_reduction(step, {"(wn" + r.n + " > 0 ? " + r.mean + "[j] : " + r.t + "(__builtin_nan(\"\")))", r.m2 + "[j]"},
                        r.at);
      } else {
        store_reduction(step, {r.acc + "[j]"}, r.at);
      }
    } else {
      emit_point_step(step, number);
    }
    ++number;
  }
  w_.close();
}

}  // namespace kiln::codegen

// Kernels along one dim of a tensor that the C++ backend calls instead of the host's reference
// kernels (codegen/loop_ir.h: NativeFallback): cumsum / cumprod and topk, each giving bit for bit
// what the reference kernels give (ir/kernels/reduction_kernels.cpp). Pasted into a module that
// computes such a node, after its runner (the thread pool or OpenMP's team), which splits the
// work into tasks; each function here runs a range of tasks on the calling thread.
//
// The tensor is seen as [outer, length, inner], contiguous, the dim of the scan or the selection
// in the middle. A task takes up to 256 (a scan) or 64 (a top-k) independent lines of that dim at
// once: consecutive inner columns, or, where inner is 1, consecutive rows, so that every step of a
// line's sequential recurrence is one vector operation over the lanes (a running sum's adds
// depend on each other; lanes side by side hide their latency).
//
// The scans accumulate as the reference does: floating values in double, rounded to the output's
// type once per element; integers in uint64 with wrap-around (PyTorch's int64 overflow), stored
// truncated to the output's type. The selection orders a line as the reference's stable sort does:
// larger (smaller) first, a NaN before every number when largest (after when smallest), equal
// values by their index.
// Lines per task: a top-k's (each line gathered and selected alone) and a scan's (a running sum
// of 256 lanes: 0.09 ms for [2, 64, 4096] along dim 1 where 64 lanes took 0.28).
enum { kiln_lanes = 64, kiln_scan_lanes = 256 };

// The tasks of a [outer, length, inner] tensor: groups of `lanes` lines.
static inline int64_t kiln_line_tasks(int64_t outer, int64_t inner, int64_t lanes) {
  if (inner == 1) return (outer + lanes - 1) / lanes;
  return outer * ((inner + lanes - 1) / lanes);
}

// Task `task`'s lines: the first one's offset, the stride between lanes and their count; the
// stride along the dim is `inner`.
static inline void kiln_line_task(int64_t task, int64_t length, int64_t outer, int64_t inner, int64_t per_task,
                                  int64_t* first, int64_t* lane_stride, int64_t* lanes) {
  if (inner == 1) {
    const int64_t row = task * per_task;
    *first = row * length;
    *lane_stride = length;
    *lanes = outer - row < per_task ? outer - row : per_task;
    return;
  }
  const int64_t blocks = (inner + per_task - 1) / per_task;
  const int64_t o = task / blocks, column = (task % blocks) * per_task;
  *first = o * length * inner + column;
  *lane_stride = 1;
  *lanes = inner - column < per_task ? inner - column : per_task;
}

// Inclusive running sums (or products) of tasks [t0, t1): out[o, i, j] = in[o, 0, j] + ... +
// in[o, i, j]. In: the input's type converted to Out (the reference converts first); Acc: double
// for a floating Out, uint64_t for an integer one.
template <class In, class Out, class Acc>
static void kiln_prefix_scan_tasks(const In* in, Out* out, int64_t outer, int64_t length, int64_t inner, bool product,
                                   int64_t t0, int64_t t1) {
  for (int64_t task = t0; task < t1; ++task) {
    int64_t first = 0, lane_stride = 1, lanes = 0;
    kiln_line_task(task, length, outer, inner, kiln_scan_lanes, &first, &lane_stride, &lanes);
    Acc running[kiln_scan_lanes];
    for (int64_t l = 0; l < kiln_scan_lanes; ++l) running[l] = product ? Acc(1) : Acc(0);
    for (int64_t i = 0; i < length; ++i) {
      const In* x = in + first + i * inner;
      Out* y = out + first + i * inner;
      if (product) {
        #pragma omp simd
        for (int64_t l = 0; l < lanes; ++l) {
          running[l] = running[l] * Acc(Out(x[l * lane_stride]));
          y[l * lane_stride] = Out(running[l]);
        }
      } else {
        #pragma omp simd
        for (int64_t l = 0; l < lanes; ++l) {
          running[l] = running[l] + Acc(Out(x[l * lane_stride]));
          y[l * lane_stride] = Out(running[l]);
        }
      }
    }
  }
}

// Whether element a of a line comes before element b (values va, vb) in the stable order of a
// top-k: the reference's comparison, ties broken by index.
template <class T>
static inline bool kiln_top_k_before(T va, int64_t a, T vb, int64_t b, bool largest) {
  const bool nan_a = va != va, nan_b = vb != vb;
  if (nan_a || nan_b) {
    if (nan_a != nan_b) return largest ? nan_a : nan_b;
    return a < b;
  }
  if (va != vb) return largest ? va > vb : va < vb;
  return a < b;
}

// The k first elements of each line of tasks [t0, t1) in that order: values [outer, k, inner] and
// their indices along the dim. A few (k up to 32) are kept in order while the line is read, an
// element entering where it goes before the last one kept; more, in a heap whose top is the
// last one kept, sorted at the end.
template <class T>
static void kiln_top_k_tasks(const T* in, T* values, int64_t* indices, int64_t outer, int64_t length, int64_t inner,
                             int64_t k, bool largest, int64_t t0, int64_t t1) {
  T* line = new T[size_t(length)];
  int64_t* order = new int64_t[size_t(length)];
  T* best = new T[size_t(k > 0 ? k : 1)];
  int64_t* best_at = new int64_t[size_t(k > 0 ? k : 1)];
  for (int64_t task = t0; task < t1; ++task) {
    int64_t first = 0, lane_stride = 1, lanes = 0;
    kiln_line_task(task, length, outer, inner, kiln_lanes, &first, &lane_stride, &lanes);
    for (int64_t l = 0; l < lanes; ++l) {
      const T* x = in + first + l * lane_stride;
      for (int64_t i = 0; i < length; ++i) line[i] = x[i * inner];
      bool nan = false;
      for (int64_t i = 0; i < length; ++i) nan |= line[i] != line[i];
      if (k > 0 && k <= 32 && !nan) {
        // No NaN: an element enters once the selection is full only where it is strictly larger
        // (smaller) than the last one kept (an equal one comes after it: a larger index), which
        // 16 elements at a time are compared with at once.
        int64_t kept = 0, i = 0;
        auto insert = [&](T v, int64_t at_index) {
          int64_t at = kept < k ? kept++ : k - 1;
          while (at > 0 && (largest ? v > best[at - 1] : v < best[at - 1])) {
            best[at] = best[at - 1];
            best_at[at] = best_at[at - 1];
            --at;
          }
          best[at] = v;
          best_at[at] = at_index;
        };
        for (; i < length && kept < k; ++i) insert(line[i], i);
        while (i < length) {
          const int64_t end = length - i < 16 ? length : i + 16;
          const T last = best[k - 1];
          bool enters = false;
          for (int64_t j = i; j < end; ++j) enters |= largest ? line[j] > last : line[j] < last;
          if (enters)
            for (int64_t j = i; j < end; ++j)
              if (largest ? line[j] > best[k - 1] : line[j] < best[k - 1]) insert(line[j], j);
          i = end;
        }
      } else if (k <= 32) {
        int64_t kept = 0;
        for (int64_t i = 0; i < length && k > 0; ++i) {
          const T v = line[i];
          if (kept == k && !kiln_top_k_before(v, i, best[k - 1], best_at[k - 1], largest)) continue;
          int64_t at = kept < k ? kept++ : k - 1;
          while (at > 0 && kiln_top_k_before(v, i, best[at - 1], best_at[at - 1], largest)) {
            best[at] = best[at - 1];
            best_at[at] = best_at[at - 1];
            --at;
          }
          best[at] = v;
          best_at[at] = i;
        }
      } else {
        // after(a, b): a goes after b (a heap of the kept ones with the last at its top).
        auto after = [&](int64_t a, int64_t b) { return kiln_top_k_before(line[b], b, line[a], a, largest); };
        auto sift_down = [&](int64_t at, int64_t size) {
          for (;;) {
            int64_t child = 2 * at + 1;
            if (child >= size) return;
            if (child + 1 < size && after(order[child + 1], order[child])) ++child;
            if (!after(order[child], order[at])) return;
            const int64_t swap = order[at];
            order[at] = order[child];
            order[child] = swap;
            at = child;
          }
        };
        for (int64_t i = 0; i < k; ++i) order[i] = i;
        for (int64_t at = k / 2; at-- > 0;) sift_down(at, k);
        for (int64_t i = k; i < length; ++i) {
          if (!after(order[0], i)) continue;
          order[0] = i;
          sift_down(0, k);
        }
        for (int64_t size = k; size > 1; --size) {  // the last kept to the end, one by one
          const int64_t swap = order[0];
          order[0] = order[size - 1];
          order[size - 1] = swap;
          sift_down(0, size - 1);
        }
        for (int64_t i = 0; i < k; ++i) {
          best[i] = line[order[i]];
          best_at[i] = order[i];
        }
      }
      // The lane's line is (o, j) of [outer, length, inner]; its selection goes to (o, :, j).
      const int64_t o = inner == 1 ? first / length + l : (first + l) / (length * inner);
      const int64_t j = inner == 1 ? 0 : (first + l) % (length * inner);
      for (int64_t i = 0; i < k; ++i) {
        values[(o * k + i) * inner + j] = best[i];
        indices[(o * k + i) * inner + j] = best_at[i];
      }
    }
  }
  delete[] line;
  delete[] order;
  delete[] best;
  delete[] best_at;
}

// scatter(self, dim, index, src) with index and src of one shape, which is self's but along the
// dim ([outer, length, inner] and [outer, index_length, inner]): out = self, then src[o, i, j]
// written to (add: added to) out[o, index[o, i, j], j] for i in order. A task takes `lanes`
// columns j of one o (where inner is 1: `lanes` rows o), each target receiving its updates in
// the reference's order; sums of floating values accumulate in double (one rounding at the end,
// the reference's), of integers with wrap-around. An index outside [0, length) raises the
// module's index fault and is skipped.
static inline int64_t kiln_scatter_lanes(int64_t length) {
  const int64_t lanes = 32768 / (length > 0 ? length : 1);  // 256 KB of running sums at the most
  return lanes < 1 ? 1 : lanes > kiln_lanes ? kiln_lanes : lanes;
}

static inline int64_t kiln_scatter_tasks_count(int64_t outer, int64_t inner, int64_t lanes) {
  if (inner == 1) return (outer + lanes - 1) / lanes;
  return outer * ((inner + lanes - 1) / lanes);
}

template <class T, class Acc>
static void kiln_scatter_tasks(const T* self, const int64_t* index, const T* src, T* out, int64_t outer,
                               int64_t length, int64_t index_length, int64_t inner, bool add, int64_t t0, int64_t t1) {
  const int64_t lanes = kiln_scatter_lanes(length);
  Acc* sums = add ? new Acc[size_t(length * lanes)] : nullptr;
  for (int64_t task = t0; task < t1; ++task) {
    // The lanes: (o, j) = (o0 + l, 0) where inner is 1, else (o0, j0 + l).
    int64_t o0 = 0, j0 = 0, count = 0;
    if (inner == 1) {
      o0 = task * lanes;
      count = outer - o0 < lanes ? outer - o0 : lanes;
    } else {
      const int64_t blocks = (inner + lanes - 1) / lanes;
      o0 = task / blocks;
      j0 = (task % blocks) * lanes;
      count = inner - j0 < lanes ? inner - j0 : lanes;
    }
    auto self_at = [&](int64_t l, int64_t p) {
      return inner == 1 ? (o0 + l) * length + p : (o0 * length + p) * inner + j0 + l;
    };
    auto index_at = [&](int64_t l, int64_t i) {
      return inner == 1 ? (o0 + l) * index_length + i : (o0 * index_length + i) * inner + j0 + l;
    };
    for (int64_t p = 0; p < length; ++p)
      for (int64_t l = 0; l < count; ++l) {
        if (add) sums[p * lanes + l] = Acc(self[self_at(l, p)]);
        else out[self_at(l, p)] = self[self_at(l, p)];
      }
    for (int64_t i = 0; i < index_length; ++i)
      for (int64_t l = 0; l < count; ++l) {
        const int64_t p = index[index_at(l, i)];
        if (p < 0 || p >= length) {
          KILN_RAISE_FAULT(kiln_fault_index);
          continue;
        }
        if (add) sums[p * lanes + l] = sums[p * lanes + l] + Acc(src[index_at(l, i)]);
        else out[self_at(l, p)] = src[index_at(l, i)];
      }
    if (add)
      for (int64_t p = 0; p < length; ++p)
        for (int64_t l = 0; l < count; ++l) out[self_at(l, p)] = T(sums[p * lanes + l]);
  }
  delete[] sums;
}

// grid_sample of a 2-d input [n, c, h, w] at a grid [n, out_h, out_w, 2] of (x, y) in [-1, 1],
// bilinear or nearest, with zeros, border or reflection padding, as the reference computes it
// (portable::grid_sample_values): coordinates in double, rounded to float where the grid is not
// f64, each output the sum over its taps (rows, then columns) of weight times value. The module is
// built with contraction on (Clang's -ffp-contract=fast, which no pragma overrides), so every
// product an add follows is kiln_product's, which no multiply-add can take in. A task is one row
// of output points of one image, all its channels.
static inline double kiln_product(double a, double b) {
  double product = a * b;
#if defined(__x86_64__) || defined(__i386__)
  __asm__("" : "+x"(product));
#elif defined(__aarch64__)
  __asm__("" : "+w"(product));
#else
  volatile double stored = product;
  product = stored;
#endif
  return product;
}

struct KilnGridSample {
  int64_t n, c, h, w, out_h, out_w;
  int nearest;        // 0: bilinear
  int padding;        // 0 zeros, 1 border, 2 reflection
  int align_corners;
  int round_to_float;  // the grid is not f64
};

static inline double kiln_gs_keep(const KilnGridSample* s, double value) {
  return s->round_to_float ? double(float(value)) : value;
}

static double kiln_gs_reflect(double x, double x_min, double x_max) {
  const double range = x_max - x_min;
  if (x < x_min) {
    const double dx = x_min - x;
    const int64_t n = int64_t(dx / range);
    const double r = dx - kiln_product(double(n), range);
    return n % 2 == 0 ? x_min + r : x_max - r;
  }
  if (x > x_max) {
    const double dx = x - x_max;
    const int64_t n = int64_t(dx / range);
    const double r = dx - kiln_product(double(n), range);
    return n % 2 == 0 ? x_max - r : x_min + r;
  }
  return x;
}

// Dim `size`'s coordinate of normalized `v`, after the padding rule: its taps and their weights
// (nearest: one tap of weight 1); a tap of -1 reads a zero.
static int kiln_gs_taps(const KilnGridSample* s, double v, int64_t size, int64_t* taps, double* weights) {
  const double length = double(size);
  double x = kiln_gs_keep(s, s->align_corners ? (v + 1) / 2.0 * (length - 1) : (kiln_product(v + 1, length) - 1) / 2.0);
  if (s->nearest) x = __builtin_nearbyint(x);
  const double low = s->align_corners ? 0.0 : -0.5, high = s->align_corners ? length - 1 : length - 0.5;
  if (!(x >= low && x <= high)) {
    if (s->padding == 1) x = x < 0.0 ? 0.0 : x > length - 1 ? length - 1 : x;
    else if (s->padding == 2) x = kiln_gs_keep(s, kiln_gs_reflect(x, low, high));
  }
  auto tap = [&](int64_t i) -> int64_t {
    if (s->padding == 0) return i >= 0 && i < size ? i : -1;
    if (s->padding == 1) return i < 0 ? 0 : i > size - 1 ? size - 1 : i;
    return int64_t(kiln_gs_reflect(double(i), low, high));
  };
  if (s->nearest) {
    taps[0] = tap(int64_t(x));
    weights[0] = 1.0;
    return 1;
  }
  const int64_t first = int64_t(__builtin_floor(x));
  const double t = x - double(first);
  taps[0] = tap(first);
  taps[1] = tap(first + 1);
  weights[0] = 1 - t;
  weights[1] = t;
  return 2;
}

template <class T, class G>
static void kiln_grid_sample_tasks(const T* input, const G* grid, T* out, const KilnGridSample* s, int64_t t0,
                                   int64_t t1) {
  const int64_t plane = s->h * s->w, points = s->out_h * s->out_w;
  for (int64_t task = t0; task < t1; ++task) {
    const int64_t image = task / s->out_h, row = task % s->out_h;
    for (int64_t col = 0; col < s->out_w; ++col) {
      const int64_t p = row * s->out_w + col;
      const G* normalized = grid + (image * points + p) * 2;
      int64_t rows[2], cols[2];
      double row_weights[2], col_weights[2];
      const int row_taps = kiln_gs_taps(s, double(normalized[1]), s->h, rows, row_weights);
      const int col_taps = kiln_gs_taps(s, double(normalized[0]), s->w, cols, col_weights);
      for (int64_t channel = 0; channel < s->c; ++channel) {
        const T* x = input + (image * s->c + channel) * plane;
        double total = 0;
        for (int i = 0; i < row_taps; ++i)
          for (int j = 0; j < col_taps; ++j) {
            const double weight = 1 * row_weights[i] * col_weights[j];
            if (rows[i] < 0 || cols[j] < 0) continue;
            const double product = kiln_product(weight, double(x[rows[i] * s->w + cols[j]]));
            total = total + product;
          }
        out[(image * s->c + channel) * points + p] = T(total);
      }
    }
  }
}

// The small-problems kernel (enumerate_small.h): one warp per problem, its
// whole tree in the warp's shared memory.
//
// A level's nodes sit in one of two buffers of kSmallMaxValues doubles, a
// node covering terms [i, j) at offset prefix(i) (the lengths of the terms
// before i), at most prefix(j) - prefix(i) long, so a level's nodes never
// overlap. Each level pairs nodes (0, 1), (2, 3), ... into the other buffer
// and copies an odd last node there unchanged (enumerate.h's tree); its
// outputs, all nodes end to end, are spread over the lanes. Lane i holds
// node i's offset and length (at most 32 nodes: kSmallMaxTerms), so a
// level's pairing is two shuffles.
#include <cuda_runtime.h>

#include <cmath>

#include "sampler/kernels/cuda/enumerate.h"
#include "sampler/kernels/cuda/enumerate_small.h"
#include "sampler/kernels/cuda/status.h"

namespace sampler::kernels::cuda {
namespace {

namespace esi = enumerate_small_internal;

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 8;
constexpr unsigned kFull = 0xffffffffu;

static_assert(kSmallMaxTerms <= kWarp, "a lane per node");

// Inclusive prefix sum over the warp.
__device__ int WarpInclusiveSum(int v, int lane) {
  for (int d = 1; d < kWarp; d *= 2) {
    const int up = __shfl_up_sync(kFull, v, d);
    if (lane >= d) v += up;
  }
  return v;
}

// Output k of a (*) b, the pairs in increasing i (a fixed order).
__device__ double Convolved(const double* a, int la, const double* b, int lb,
                            int k) {
  const int lo = k - lb + 1 > 0 ? k - lb + 1 : 0;
  const int hi = k < la - 1 ? k : la - 1;
  double sum = 0.0;
  for (int i = lo; i <= hi; ++i) sum = fma(a[i], b[k - i], sum);
  return sum;
}

// A level's new nodes, per warp: where each one's outputs start among the
// level's (prefix sums) and its operands (b_len 0: a copy of a).
struct LevelNodes {
  int starts[kWarp + 1];
  int a_at[kWarp], a_len[kWarp], b_at[kWarp], b_len[kWarp];
};

template <typename T>
__global__ void __launch_bounds__(kWarp* kWarpsPerBlock)
    SmallKernel(EnumerateSmallDeviceBatch<T> batch) {
  __shared__ double buffers[kWarpsPerBlock][2][kSmallMaxValues];
  __shared__ LevelNodes levels[kWarpsPerBlock];
  const int lane = threadIdx.x % kWarp;
  const int w = threadIdx.x / kWarp;
  const int64_t p = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + w;
  if (p >= batch.num_problems) return;  // whole warps only
  const esi::SmallProblem prob = batch.problems[p];
  const T* values = batch.values + prob.values;
  T* out = batch.out + prob.out;
  const int n_terms = prob.num_terms;

  if (n_terms == 1) {  // the term itself
    for (int i = lane; i < prob.num_values; i += kWarp) out[i] = values[i];
    if (lane == 0) batch.status[p] = 0;
    return;
  }

  // Lane i: node i's offset and length in the current buffer.
  int len = lane < n_terms ? batch.lengths[prob.lengths + lane] : 0;
  int at = WarpInclusiveSum(len, lane) - len;
  for (int i = lane; i < prob.num_values; i += kWarp) {
    buffers[w][0][i] = static_cast<double>(values[i]);
  }
  LevelNodes& nodes = levels[w];
  bool bad = false;
  int cur = 0;
  for (int n = n_terms; n > 1;) {
    const int next_n = (n + 1) / 2;
    // New node j (lane j): the pair (2j, 2j + 1), or node 2j alone.
    const int a_at = __shfl_sync(kFull, at, (2 * lane) % kWarp);
    const int a_len = __shfl_sync(kFull, len, (2 * lane) % kWarp);
    const int b_at = __shfl_sync(kFull, at, (2 * lane + 1) % kWarp);
    const int b_len_of = __shfl_sync(kFull, len, (2 * lane + 1) % kWarp);
    const bool live = lane < next_n;
    const int b_len = live && 2 * lane + 1 < n ? b_len_of : 0;
    len = live ? (b_len > 0 ? a_len + b_len - 1 : a_len) : 0;
    at = live ? a_at : 0;
    const int end = WarpInclusiveSum(len, lane);
    __syncwarp();  // the previous level's readers are done with `nodes`
    if (live) {
      nodes.starts[lane + 1] = end;
      nodes.a_at[lane] = a_at;
      nodes.a_len[lane] = a_len;
      nodes.b_at[lane] = b_at;
      nodes.b_len[lane] = b_len;
    }
    if (lane == 0) nodes.starts[0] = 0;
    const int total = __shfl_sync(kFull, end, kWarp - 1);
    __syncwarp();  // the nodes, and the previous level's results
    const double* src = buffers[w][cur];
    double* dst = buffers[w][cur ^ 1];
    const bool root = next_n == 1;
    for (int g = lane; g < total; g += kWarp) {
      int j = 0;
      while (nodes.starts[j + 1] <= g) ++j;
      const int k = g - nodes.starts[j];
      const double* a = src + nodes.a_at[j];
      const double v = nodes.b_len[j] == 0
                           ? a[k]
                           : Convolved(a, nodes.a_len[j], src + nodes.b_at[j],
                                       nodes.b_len[j], k);
      if (root) {
        const T r = static_cast<T>(v);
        bad |= !isfinite(v) || !isfinite(r);
        out[k] = r;
      } else {
        dst[nodes.a_at[j] + k] = v;
      }
    }
    cur ^= 1;
    n = next_n;
  }
  bad = __any_sync(kFull, bad);
  if (lane == 0) batch.status[p] = bad ? kEnumerateStatusNonFinite : 0u;
}

}  // namespace

template <typename T>
absl::Status LaunchEnumerateSmall(const EnumerateSmallDeviceBatch<T>& batch,
                                  cudaStream_t stream) {
  if (batch.num_problems == 0) return absl::OkStatus();
  const int blocks = (batch.num_problems + kWarpsPerBlock - 1) / kWarpsPerBlock;
  SmallKernel<T><<<blocks, kWarp * kWarpsPerBlock, 0, stream>>>(batch);
  SAMPLER_CUDA_RETURN_IF_LAUNCH_FAILED();
  return absl::OkStatus();
}

template absl::Status LaunchEnumerateSmall<float>(
    const EnumerateSmallDeviceBatch<float>&, cudaStream_t);
template absl::Status LaunchEnumerateSmall<double>(
    const EnumerateSmallDeviceBatch<double>&, cudaStream_t);

}  // namespace sampler::kernels::cuda

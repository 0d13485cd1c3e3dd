// Host stand-ins for the CUDA built-ins the warp SVD kernel uses: 32 threads a warp,
// shuffles, votes and __syncwarp by a barrier. Slow (a context switch a shuffle), exact.
// Host emulation of a single warp: 32 threads, warp intrinsics by barriers.
#include <atomic>
#include <barrier>
#include <thread>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <cstdio>
#include <vector>
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __global__
#define __align__(x)
#define __launch_bounds__(...)
#define __shared__
#define __host__
#define __constant__
struct Dim3 { unsigned x, y, z; };
inline thread_local Dim3 threadIdx, blockIdx;
inline Dim3 blockDim{32, 1, 1};
inline Dim3 gridDim{1, 1, 1};
// A block's barriers and shuffle slots, the thread's own (thread_local) so that several
// blocks of a cluster (emu_run_cluster) run side by side.
inline thread_local std::barrier<>* g_bar;
inline thread_local int g_lane;
inline thread_local unsigned long long* g_slots;
// Barriers of the lane groups a partial __syncwarp mask names: widths 16 and 8.
inline thread_local std::barrier<>** g_gbar16;
inline thread_local std::barrier<>** g_gbar8;
// A cluster's: its barrier, each block's shared memory, this thread's block (rank).
inline std::barrier<>* g_cbar;
inline unsigned char* g_smem_of[16];
inline thread_local int g_rank;
inline thread_local unsigned char* g_smem;
// Runs body() as a cluster of `blocks` blocks of one warp each: 32 threads a block, a lane
// each, barriers a block's own; `smem` bytes of shared memory a block (g_smem).
template <typename F> void emu_run_cluster(int blocks, size_t smem, F body) {
    struct Block {
        std::barrier<> bar{32}, b16a{16}, b16b{16}, b8a{8}, b8b{8}, b8c{8}, b8d{8};
        std::barrier<>* g16[2] = {&b16a, &b16b};
        std::barrier<>* g8[4] = {&b8a, &b8b, &b8c, &b8d};
        unsigned long long slots[32];
        std::vector<unsigned char> mem;
    };
    std::vector<Block> bl(blocks);
    std::barrier<> cbar(32 * blocks);
    g_cbar = &cbar;
    for (int b = 0; b < blocks; ++b) {
        bl[b].mem.assign(smem + 16, 0);
        g_smem_of[b] = bl[b].mem.data() + (16 - (uintptr_t)bl[b].mem.data() % 16) % 16;
    }
    std::vector<std::thread> th;
    for (int b = 0; b < blocks; ++b)
        for (int l = 0; l < 32; ++l)
            th.emplace_back([=, &bl] {
                Block& k = bl[b];
                g_bar = &k.bar; g_gbar16 = k.g16; g_gbar8 = k.g8; g_slots = k.slots;
                g_rank = b; g_smem = g_smem_of[b];
                g_lane = l; threadIdx = {(unsigned)l, 0, 0}; blockIdx = {(unsigned)b, 0, 0};
                body();
            });
    for (auto& t : th) t.join();
}
// Runs body() as a block of one warp: 32 threads, a lane each, barriers shared.
template <typename F> void emu_run_warp(F body) { emu_run_cluster(1, 0, body); }
template <typename T> T emu_exchange(T v, int src) {
    static_assert(sizeof(T) <= 8, "");
    unsigned long long u = 0; std::memcpy(&u, &v, sizeof(T));
    g_slots[g_lane] = u; g_bar->arrive_and_wait();
    unsigned long long r = g_slots[src & 31]; g_bar->arrive_and_wait();
    T out; std::memcpy(&out, &r, sizeof(T)); return out;
}
template <typename T> T __shfl_sync(unsigned, T v, int src, int w = 32) { return emu_exchange(v, (g_lane & ~(w - 1)) | (src & (w - 1))); }
template <typename T> T __shfl_xor_sync(unsigned, T v, int off, int w = 32) { return emu_exchange(v, g_lane ^ off); }
inline unsigned __ballot_sync(unsigned, bool p) {
    g_slots[g_lane] = p; g_bar->arrive_and_wait();
    unsigned m = 0; for (int i = 0; i < 32; ++i) m |= (g_slots[i] ? 1u : 0u) << i;
    g_bar->arrive_and_wait(); return m;
}
inline bool __any_sync(unsigned, bool p) { return __ballot_sync(0, p) != 0; }
inline bool __all_sync(unsigned, bool p) { return __ballot_sync(0, p) == 0xffffffffu; }
// A partial mask of 16 or 8 lanes (an aligned group) waits for its group only.
inline void __syncwarp(unsigned m = 0xffffffffu) {
    const int w = __builtin_popcount(m);
    if (w == 16) g_gbar16[__builtin_ctz(m) / 16]->arrive_and_wait();
    else if (w == 8) g_gbar8[__builtin_ctz(m) / 8]->arrive_and_wait();
    else g_bar->arrive_and_wait();
}
inline void __syncthreads() { g_bar->arrive_and_wait(); }
inline int __syncthreads_or(int p) { return __ballot_sync(0, p != 0) != 0; }  // one warp a block
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int atomicMax(int* a, int v) {
    std::atomic_ref<int> r(*a);
    int old = r.load();
    while (old < v && !r.compare_exchange_weak(old, v)) {}
    return old;
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __ffs(unsigned x) { return __builtin_ffs(x); }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double f; std::memcpy(&f, &i, 8); return f; }
inline long long __double_as_longlong(double f) { long long i; std::memcpy(&i, &f, 8); return i; }
// The hardware's estimates are within 2 ulps (rsqrtf, __fdividef) or 1 (double rsqrt) of
// the exact value: modelled as the exact value moved by -2..2 ulps (-1..1), chosen by a hash
// of the result, so that code relying on them being exact shows it (and the lanes of a
// pair, computing from the same numbers, still agree).
template <typename F> inline F emu_ulps(F r, int most) {
    if (!std::isfinite(r) || r == 0) return r;
    unsigned long long h = 0;
    std::memcpy(&h, &r, sizeof(F));
    h = (h * 0x9E3779B97F4A7C15ull) >> 59;
    int k = (int)(h % (2 * most + 1)) - most;
    for (; k > 0; --k) r = std::nextafter(r, (F)INFINITY);
    for (; k < 0; ++k) r = std::nextafter(r, -(F)INFINITY);
    return r;
}
inline float rsqrtf(float x) { return emu_ulps((float)(1.0 / std::sqrt((double)x)), 2); }
inline double rsqrt(double x) { return emu_ulps(1.0 / std::sqrt(x), 1); }
inline float __fdividef(float a, float b) { return emu_ulps(a / b, 2); }
inline unsigned __cvta_generic_to_shared(const void*) { return 0; }
using std::sqrt; using std::fabs;
inline float sqrtf(float x) { return std::sqrt(x); }
inline float fabsf(float x) { return std::fabs(x); }
inline float fmaf(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline int min(int a, int b) { return a < b ? a : b; }
struct float4 { float x, y, z, w; }; struct double2 { double x, y; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline double2 make_double2(double a, double b) { return {a, b}; }

// Micro-benchmarks of hardware costs the library's kernels are built on, which no library
// kernel measures by itself: the thread-block cluster's barrier and distributed-shared-
// memory exchanges (the cluster QR kernel takes one a column). Library kernels and their
// instantiations are timed through the library's own harness instead (README.md).
// Build: nvcc -O3 -arch=sm_90 -o cluster_micro gpu-lab/cluster_micro.cu
// Run:   ./cluster_micro
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "../crates/batchlin/src/cuda/kernels/common.cu"
#include "../crates/batchlin/src/cuda/kernels/qr_cluster.cu"

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, \
                    __LINE__, #x);                                                         \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

// Cluster exchange costs: a loop of cluster barriers, of pushes + barrier, of
// barrier + pulls (8 remote loads in flight), of __syncthreads.
extern "C" __global__ void __cluster_dims__(8, 1, 1) mb_sync(int iters, float* out) {
    float x = threadIdx.x;
    for (int i = 0; i < iters; ++i) { bl_cluster_sync(); x += 1.0f; }
    if (x < 0) out[0] = x;
}
extern "C" __global__ void __cluster_dims__(8, 1, 1) mb_bar(int iters, float* out) {
    float x = threadIdx.x;
    for (int i = 0; i < iters; ++i) { __syncthreads(); x += 1.0f; }
    if (x < 0) out[0] = x;
}
extern "C" __global__ void __cluster_dims__(8, 1, 1) mb_push(int iters, float* out) {
    __shared__ float buf[8 * 72];
    const unsigned rank = bl_cluster_rank();
    float x = threadIdx.x;
    for (int i = 0; i < iters; ++i) {
        if (threadIdx.x < 72) bl_push_all(buf, (int)rank * 72 + threadIdx.x, x);
        bl_cluster_sync();
        if (threadIdx.x < 72) {
            float s = 0;
#pragma unroll
            for (int c = 0; c < 8; ++c) s += buf[c * 72 + threadIdx.x];
            x += s * 1e-9f;
        }
    }
    if (x < 0) out[0] = x;
}
template <typename T> __device__ __forceinline__ T mb_ld(unsigned addr) {
    T x;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(x) : "r"(addr) : "memory");
    return x;
}
extern "C" __global__ void __cluster_dims__(8, 1, 1) mb_pull(int iters, float* out) {
    __shared__ float buf[2][72];
    float x = threadIdx.x;
    for (int i = 0; i < iters; ++i) {
        if (threadIdx.x < 72) buf[i & 1][threadIdx.x] = x;
        bl_cluster_sync();
        if (threadIdx.x < 72) {
            float v[8];
#pragma unroll
            for (int c = 0; c < 8; ++c) v[c] = mb_ld<float>(bl_mapa(&buf[i & 1][threadIdx.x], c));
            float s = 0;
#pragma unroll
            for (int c = 0; c < 8; ++c) s += v[c];
            x += s * 1e-9f;
        }
    }
    bl_cluster_sync();
    if (x < 0) out[0] = x;
}
static void clmicro() {
    typedef void (*Mb)(int, float*);
    const Mb fs[] = {mb_bar, mb_sync, mb_push, mb_pull};
    const char* nm[] = {"syncthreads", "cluster_sync", "push72x8+sync", "sync+pull72x8"};
    float* out;
    CK(cudaMalloc(&out, 4));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int threads : {128, 256})
        for (int f = 0; f < 4; ++f) {
            const int iters = 20000;
            fs[f]<<<128, threads>>>(100, out);
            CK(cudaEventRecord(e0));
            fs[f]<<<128, threads>>>(iters, out);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            printf("MICRO %-16s threads %d: %.1f ns an iteration\n", nm[f], threads, ms * 1e6 / iters);
        }
}

int main() {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    clmicro();
    return 0;
}

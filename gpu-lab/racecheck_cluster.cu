// Does compute-sanitizer's racecheck take a thread-block cluster barrier as a barrier of
// the block? The cluster QR kernel (kernels/qr_cluster.cu) separates some of its block's
// own shared-memory accesses by cluster barriers alone (barrier.cluster.arrive.release +
// wait.acquire, which every thread of every block of the cluster executes, so they order
// the block's threads as __syncthreads does). Each kernel below is race-free by the PTX
// memory model except `none`, the positive control; each checks its own result.
// Build: nvcc -O3 -arch=sm_90 -lineinfo -o racecheck_cluster gpu-lab/racecheck_cluster.cu
// Run:   for k in none block cluster split dsm; do
//          compute-sanitizer --tool racecheck --racecheck-report all ./racecheck_cluster $k; done
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#include "../crates/batchlin/src/cuda/kernels/common.cu"
#include "../crates/batchlin/src/cuda/kernels/qr_cluster.cu"

constexpr int NT = 128, STEPS = 4;

// Thread t writes slot t, then (after the barrier) reads slot NT-1-t, which another warp
// wrote (RAW), and in the next step writes its own slot again, which another warp read
// (WAR). The barrier is the template parameter:
// 0 none, 1 __syncthreads, 2 cluster barrier, 3 split cluster barrier (arrive early, wait
// late, the arrive after this step's reads and the wait before the next step's writes).
template <int BAR>
__device__ void exchange(float* out) {
    __shared__ float s[NT];
    const int t = threadIdx.x;
    float acc = 0.0f;
    for (int step = 0; step < STEPS; ++step) {
        if (BAR == 3 && step > 0) bl_cluster_wait();
        s[t] = float(step * NT + t);
        if (BAR == 1) __syncthreads();
        if (BAR == 2 || BAR == 3) bl_cluster_sync();
        acc += s[NT - 1 - t];
        if (BAR == 1) __syncthreads();
        if (BAR == 2) bl_cluster_sync();
        if (BAR == 3) bl_cluster_arrive();
    }
    if (BAR == 3) bl_cluster_wait();
    out[blockIdx.x * NT + t] = acc;
}

extern "C" __global__ void __cluster_dims__(BL_QC_CS, 1, 1) rc_none(float* o) { exchange<0>(o); }
extern "C" __global__ void __cluster_dims__(BL_QC_CS, 1, 1) rc_block(float* o) { exchange<1>(o); }
extern "C" __global__ void __cluster_dims__(BL_QC_CS, 1, 1) rc_cluster(float* o) { exchange<2>(o); }
extern "C" __global__ void __cluster_dims__(BL_QC_CS, 1, 1) rc_split(float* o) { exchange<3>(o); }

// Across blocks, as the cluster kernel's exchanges: every block pushes its value into
// slot `rank` of every block's buffer (distributed shared memory), a cluster barrier, each
// block sums its own buffer, a cluster barrier before the next step's pushes.
extern "C" __global__ void __cluster_dims__(BL_QC_CS, 1, 1) rc_dsm(float* out) {
    __shared__ float buf[BL_QC_CS];
    const unsigned rank = bl_cluster_rank();
    float acc = 0.0f;
    bl_cluster_sync();  // every peer has started
    for (int step = 0; step < STEPS; ++step) {
        if (threadIdx.x == 0) bl_push_all(buf, (int)rank, float(step * BL_QC_CS + rank));
        bl_cluster_sync();
        float s = 0.0f;
        for (int c = 0; c < BL_QC_CS; ++c) s += buf[c];
        acc += s;
        bl_cluster_sync();
    }
    out[blockIdx.x * NT + threadIdx.x] = acc;
}

int main(int argc, char** argv) {
    const char* which = argc > 1 ? argv[1] : "cluster";
    void (*k)(float*) = nullptr;
    if (!strcmp(which, "none")) k = rc_none;
    if (!strcmp(which, "block")) k = rc_block;
    if (!strcmp(which, "cluster")) k = rc_cluster;
    if (!strcmp(which, "split")) k = rc_split;
    if (!strcmp(which, "dsm")) k = rc_dsm;
    if (!k) { fprintf(stderr, "unknown kernel %s\n", which); return 2; }
    const int blocks = 2 * BL_QC_CS;
    float* d;
    cudaMalloc(&d, sizeof(float) * blocks * NT);
    k<<<blocks, NT>>>(d);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", which, cudaGetErrorString(e)); return 2; }
    float h[blocks * NT];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    // Expected: exchange reads slot NT-1-t of each step; dsm sums the cluster's ranks.
    int bad = 0;
    for (int b = 0; b < blocks; ++b)
        for (int t = 0; t < NT; ++t) {
            double want = 0;
            for (int step = 0; step < STEPS; ++step) {
                if (k == rc_dsm)
                    for (int c = 0; c < BL_QC_CS; ++c) want += step * BL_QC_CS + c;
                else
                    want += step * NT + (NT - 1 - t);
            }
            if (h[b * NT + t] != (float)want && k != rc_none) ++bad;
        }
    if (k == rc_none)
        printf("none: racy by design, result not checked\n");
    else
        printf("%s: %s (%d wrong of %d)\n", which, bad ? "WRONG" : "results right", bad, blocks * NT);
    cudaFree(d);
    return bad ? 1 : 0;
}

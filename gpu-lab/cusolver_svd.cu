// Which cuSOLVER SVD serves one large matrix best: gesvdj (Jacobi), Xgesvdp (polar
// decomposition) and Xgesvd (bidiagonalisation and QR iteration), n x n Gaussian, with
// vectors (thin) and values alone, float and double; the median of 5 timed calls (CUDA
// events, after one warm-up) and ||A - U S V^T||_F / ||A||_F from a float64 host check.
// The library's `cusolver` SVD kernel uses the one that wins (cuda/cusolver.rs).
// `./cusolver_svd err N...` instead prints Xgesvdp's perturbation (h_err_sigma) for n x n
// Gaussian (three seeds), rank-one and zero matrices scaled as the library scales them
// (max|a| in [0.5, 1)), vectors and values, float and double: what the library's
// fallback threshold sees, and the sizes where Xgesvdp fails (run one size a process: a
// failure inside cuSOLVER leaves the context unusable).
//
//   nvcc -O3 -arch=sm_90 -o cusolver_svd gpu-lab/cusolver_svd.cu -lcusolver && ./cusolver_svd
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#define CK(x)                                                                       \
    do {                                                                            \
        auto e_ = (x);                                                              \
        if ((int)e_ != 0) {                                                         \
            std::printf("%s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)e_);      \
            std::exit(1);                                                           \
        }                                                                           \
    } while (0)

template <typename T> constexpr cudaDataType dt() { return sizeof(T) == 4 ? CUDA_R_32F : CUDA_R_64F; }

// ||A - U S V^T|| / ||A|| on the host (U n x n, V n x n column-major; V not transposed).
template <typename T>
double recon(const std::vector<T>& a, const std::vector<T>& u, const std::vector<T>& s, const std::vector<T>& v,
             int n, bool v_transposed) {
    double num = 0, den = 0;
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
            double x = 0;
            for (int k = 0; k < n; ++k) {
                const double vjk = v_transposed ? v[j * n + k] : v[k * n + j];
                x += (double)u[k * n + i] * s[k] * vjk;
            }
            const double ai = a[j * n + i];
            num += (ai - x) * (ai - x);
            den += ai * ai;
        }
    return std::sqrt(num / den);
}

template <typename T> void run(cusolverDnHandle_t h, cusolverDnParams_t params, int n, bool check) {
    const char* tn = sizeof(T) == 4 ? "float" : "double";
    std::vector<T> a((size_t)n * n);
    std::mt19937_64 g(7);
    std::normal_distribution<double> nd;
    for (auto& x : a) x = (T)nd(g);
    T *da, *dw, *ds, *du, *dv;
    int* dinfo;
    const size_t bytes = a.size() * sizeof(T);
    CK(cudaMalloc(&da, bytes));
    CK(cudaMalloc(&dw, bytes));
    CK(cudaMalloc(&ds, n * sizeof(T)));
    CK(cudaMalloc(&du, bytes));
    CK(cudaMalloc(&dv, bytes));
    CK(cudaMalloc(&dinfo, sizeof(int)));
    CK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    gesvdjInfo_t jp;
    CK(cusolverDnCreateGesvdjInfo(&jp));
    for (int method = 0; method < 3; ++method)
        for (int vectors = 1; vectors >= 0; --vectors) {
            const char* name = method == 0 ? "gesvdj" : method == 1 ? "Xgesvdp" : "Xgesvd";
            size_t dbytes = 0, hbytes = 0;
            int lwork = 0;
            const auto jobz = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
            const signed char job = vectors ? 'S' : 'N';
            if (method == 0) {
                if (sizeof(T) == 4)
                    CK(cusolverDnSgesvdj_bufferSize(h, jobz, 1, n, n, (float*)dw, n, (float*)ds, (float*)du, n,
                                                    (float*)dv, n, &lwork, jp));
                else
                    CK(cusolverDnDgesvdj_bufferSize(h, jobz, 1, n, n, (double*)dw, n, (double*)ds, (double*)du, n,
                                                    (double*)dv, n, &lwork, jp));
                dbytes = (size_t)lwork * sizeof(T);
            } else if (method == 1) {
                CK(cusolverDnXgesvdp_bufferSize(h, params, jobz, 1, n, n, dt<T>(), dw, n, dt<T>(), ds, dt<T>(), du,
                                                n, dt<T>(), dv, n, dt<T>(), &dbytes, &hbytes));
            } else {
                CK(cusolverDnXgesvd_bufferSize(h, params, job, job, n, n, dt<T>(), dw, n, dt<T>(), ds, dt<T>(), du,
                                               n, dt<T>(), dv, n, dt<T>(), &dbytes, &hbytes));
            }
            void* dwork;
            CK(cudaMalloc(&dwork, std::max<size_t>(dbytes, 16)));
            std::vector<char> hwork(std::max<size_t>(hbytes, 16));
            auto call = [&] {
                CK(cudaMemcpyAsync(dw, da, bytes, cudaMemcpyDeviceToDevice));
                if (method == 0) {
                    if (sizeof(T) == 4)
                        CK(cusolverDnSgesvdj(h, jobz, 1, n, n, (float*)dw, n, (float*)ds, (float*)du, n, (float*)dv,
                                             n, (float*)dwork, lwork, dinfo, jp));
                    else
                        CK(cusolverDnDgesvdj(h, jobz, 1, n, n, (double*)dw, n, (double*)ds, (double*)du, n,
                                             (double*)dv, n, (double*)dwork, lwork, dinfo, jp));
                } else if (method == 1) {
                    double herr = 0;
                    CK(cusolverDnXgesvdp(h, params, jobz, 1, n, n, dt<T>(), dw, n, dt<T>(), ds, dt<T>(), du, n,
                                         dt<T>(), dv, n, dt<T>(), dwork, dbytes, hwork.data(), hbytes, dinfo, &herr));
                } else {
                    CK(cusolverDnXgesvd(h, params, job, job, n, n, dt<T>(), dw, n, dt<T>(), ds, dt<T>(), du, n,
                                        dt<T>(), dv, n, dt<T>(), dwork, dbytes, hwork.data(), hbytes, dinfo));
                }
            };
            call();
            CK(cudaDeviceSynchronize());
            std::vector<float> ms;
            for (int r = 0; r < 5; ++r) {
                cudaEventRecord(e0);
                call();
                cudaEventRecord(e1);
                CK(cudaEventSynchronize(e1));
                float t;
                cudaEventElapsedTime(&t, e0, e1);
                ms.push_back(t);
            }
            std::sort(ms.begin(), ms.end());
            int info = 0;
            CK(cudaMemcpy(&info, dinfo, sizeof(int), cudaMemcpyDeviceToHost));
            double err = -1;
            if (vectors && check) {
                std::vector<T> u(a.size()), s(n), v(a.size());
                CK(cudaMemcpy(u.data(), du, bytes, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(s.data(), ds, n * sizeof(T), cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(v.data(), dv, bytes, cudaMemcpyDeviceToHost));
                err = recon(a, u, s, v, n, method == 2);
            }
            std::printf("%-7s %-6s n=%5d %-7s %9.3f ms  info %d  recon %.2e\n", name, tn, n,
                        vectors ? "vectors" : "values", ms[2], info, err);
            cudaFree(dwork);
        }
    cusolverDnDestroyGesvdjInfo(jp);
    cudaFree(da);
    cudaFree(dw);
    cudaFree(ds);
    cudaFree(du);
    cudaFree(dv);
    cudaFree(dinfo);
}

// Xgesvdp's perturbation on structured n x n input (see the header).
template <typename T> void err(cusolverDnHandle_t h, cusolverDnParams_t params, int n) {
    const size_t elems = (size_t)n * n, bytes = elems * sizeof(T);
    T *da, *ds, *du, *dv;
    int* dinfo;
    CK(cudaMalloc(&da, bytes));
    CK(cudaMalloc(&ds, n * sizeof(T)));
    CK(cudaMalloc(&du, bytes));
    CK(cudaMalloc(&dv, bytes));
    CK(cudaMalloc(&dinfo, sizeof(int)));
    const char* kinds[] = {"gauss1", "gauss2", "gauss3", "rank1", "zero"};
    for (int kind = 0; kind < 5; ++kind)
        for (int vectors = 1; vectors >= 0; --vectors) {
            std::vector<T> a(elems);
            std::mt19937_64 g(kind + 1);
            std::normal_distribution<double> nd;
            std::vector<double> x(n), y(n);
            for (auto& v : x) v = nd(g);
            for (auto& v : y) v = nd(g);
            double mx = 0;
            for (size_t i = 0; i < elems; ++i) {
                const double v = kind < 3 ? nd(g) : kind == 3 ? x[i % n] * y[i / n] : 0.0;
                a[i] = (T)v;
                mx = std::max(mx, std::fabs(v));
            }
            if (mx > 0) {  // max|a| into [0.5, 1), as the library scales
                int e;
                std::frexp(mx, &e);
                for (auto& v : a) v = (T)std::ldexp((double)v, -e);
            }
            CK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
            const auto jobz = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
            size_t dbytes = 0, hbytes = 0;
            CK(cusolverDnXgesvdp_bufferSize(h, params, jobz, 1, n, n, dt<T>(), da, n, dt<T>(), ds, dt<T>(), du, n,
                                            dt<T>(), dv, n, dt<T>(), &dbytes, &hbytes));
            void* dwork;
            CK(cudaMalloc(&dwork, std::max<size_t>(dbytes, 16)));
            std::vector<char> hwork(std::max<size_t>(hbytes, 16));
            double herr = -1;
            const int st = (int)cusolverDnXgesvdp(h, params, jobz, 1, n, n, dt<T>(), da, n, dt<T>(), ds, dt<T>(), du,
                                                   n, dt<T>(), dv, n, dt<T>(), dwork, dbytes, hwork.data(), hbytes,
                                                   dinfo, &herr);
            const cudaError_t ce = cudaDeviceSynchronize();
            int info = -1;
            if (ce == cudaSuccess) cudaMemcpy(&info, dinfo, sizeof(int), cudaMemcpyDeviceToHost);
            std::vector<T> s(n);
            if (ce == cudaSuccess) cudaMemcpy(s.data(), ds, n * sizeof(T), cudaMemcpyDeviceToHost);
            const double eps = sizeof(T) == 4 ? 1.1920929e-7 : 2.220446049250313e-16;
            std::printf("err %-6s n=%5d %-6s %-7s status %d cuda %d info %d h_err_sigma %.3e (%.1f eps) smin %.3e\n",
                        sizeof(T) == 4 ? "float" : "double", n, kinds[kind], vectors ? "vectors" : "values", st,
                        (int)ce, info, herr, herr / eps, ce == cudaSuccess ? (double)s[n - 1] : -1.0);
            std::fflush(stdout);
            if (ce != cudaSuccess) std::exit(2);
            cudaFree(dwork);
        }
    cudaFree(da);
    cudaFree(ds);
    cudaFree(du);
    cudaFree(dv);
    cudaFree(dinfo);
}

int main(int argc, char** argv) {
    cusolverDnHandle_t h;
    cusolverDnParams_t params;
    CK(cusolverDnCreate(&h));
    CK(cusolverDnCreateParams(&params));
    if (argc > 2 && std::string(argv[1]) == "err") {
        for (int i = 2; i < argc; ++i) {
            err<float>(h, params, std::atoi(argv[i]));
            err<double>(h, params, std::atoi(argv[i]));
        }
        return 0;
    }
    for (int n : {256, 512, 1024, 2048}) {
        run<float>(h, params, n, n <= 1024);
        run<double>(h, params, n, n <= 1024);
    }
    cusolverDnDestroyParams(params);
    cusolverDnDestroy(h);
    return 0;
}

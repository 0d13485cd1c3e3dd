// The SVD kernels' arguments for one m x n row-major matrix, as cuda/svd.rs orients them:
// a wide A decomposed as its transpose (through its strides); work U -> U and work V ->
// Vh^T for a tall A, work U -> Vh^T and work V -> U for a wide one. U is m x uc and Vh
// vr x n, row-major (full: uc = m, vr = n; else min(m, n)); u == NULL: values alone.
// Shared by the emulators' drivers (svd_warp_emu.cpp, svd_bidiag_emu.cpp,
// svd_jacobi_emu.cpp), each adding its kernel's own fields.
template <typename T> SvdArgs svd_emu_args(const T* a, int m, int n, int full, T* u, T* s, T* vh, unsigned* info) {
    SvdArgs g{};
    const bool wide = m < n;
    const int p = wide ? n : m, q = wide ? m : n;
    const bool vec = u != nullptr;
    const int uc = full ? m : q;
    g.a = a;
    if (!wide) { g.a_rs = n; g.a_cs = 1; } else { g.a_rs = 1; g.a_cs = n; }
    g.s = s; g.s_cs = 1;
    if (vec) {
        if (!wide) { g.x = u; g.x_rs = uc; g.x_cs = 1; g.y = vh; g.y_rs = 1; g.y_cs = n; }
        else { g.x = vh; g.x_rs = 1; g.x_cs = n; g.y = u; g.y_rs = uc; g.y_cs = 1; }
    }
    g.info = info; g.p = p; g.q = q; g.xcols = vec && full ? p : q; g.sign_from_v = wide;
    g.max_sweeps = 40; g.nmat = 1;
    return g;
}

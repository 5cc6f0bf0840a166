// How many clusters of each size an sm_90 GPU runs at once, and what one cluster more costs.
//
// A cluster's CTAs must share a GPC, so a GPU of 132 SMs does not run 132 / n clusters of n CTAs
// (one CTA per SM) when its GPCs hold SM counts that n does not divide. A grid of more clusters
// than fit runs a second wave. This probe asks the driver (cudaOccupancyMaxActiveClusters) for
// cluster sizes 1-16 at one and at two CTAs per SM, then times a spinning kernel at the largest
// resident grid and one cluster more, and records each CTA's SM so the GPCs' sizes can be read
// off the largest clusters. Prints one JSON object.
//
//   nvcc -O2 -arch=sm_90a -o cluster_capacity bench/probes/cluster_capacity.cu && ./cluster_capacity
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <set>
#include <map>
#include <cuda_runtime.h>

#define CHECK(x)                                                                   \
    do {                                                                           \
        cudaError_t e_ = (x);                                                      \
        if (e_ != cudaSuccess) {                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,              \
                    cudaGetErrorString(e_));                                       \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned smid() {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

// Each CTA spins for `ns` and records (SM, start, end). Dynamic shared memory is only there to
// set how many CTAs an SM holds.
__global__ void spin(unsigned long long ns, unsigned long long *rec) {
    extern __shared__ unsigned char smem[];
    unsigned long long t0 = globaltimer();
    if (threadIdx.x == 0) smem[0] = 1;
    while (globaltimer() - t0 < ns) {
    }
    if (threadIdx.x == 0) {
        unsigned b = blockIdx.x;
        rec[3 * b] = smid();
        rec[3 * b + 1] = t0;
        rec[3 * b + 2] = globaltimer();
    }
}

static cudaLaunchConfig_t config(int clusters, int size, size_t smem, cudaLaunchAttribute *attr) {
    cudaLaunchConfig_t c = {};
    c.gridDim = dim3(clusters * size);
    c.blockDim = dim3(384);
    c.dynamicSmemBytes = smem;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = size;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    c.attrs = attr;
    c.numAttrs = 1;
    return c;
}

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    CHECK(cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024));
    CHECK(cudaFuncSetAttribute(spin, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    printf("{\"gpu\": \"%s\", \"sms\": %d,\n \"max_active_clusters\": [", prop.name,
           prop.multiProcessorCount);
    const size_t smems[2] = {200 * 1024, 100 * 1024};   // one / two CTAs per SM
    const int sizes[6] = {1, 2, 4, 8, 12, 16};
    std::map<std::pair<int, size_t>, int> fit;
    bool first = true;
    for (size_t smem : smems) {
        for (int size : sizes) {
            cudaLaunchAttribute attr[1];
            cudaLaunchConfig_t c = config(1, size, smem, attr);
            int n = 0;
            cudaError_t e = cudaOccupancyMaxActiveClusters(&n, spin, &c);
            if (e != cudaSuccess) {
                cudaGetLastError();
                n = -1;
            }
            fit[{size, smem}] = n;
            printf("%s\n  {\"cluster\": %d, \"smem\": %zu, \"clusters\": %d, \"ctas\": %d}",
                   first ? "" : ",", size, smem, n, n > 0 ? n * size : 0);
            first = false;
        }
    }
    printf("\n ],\n \"timed\": [");
    // The spin: 20 µs per CTA, so one wave is ~20 µs and a second wave doubles the span.
    const unsigned long long ns = 20000;
    unsigned long long *rec;
    CHECK(cudaMalloc(&rec, 3 * sizeof(unsigned long long) * 4096));
    first = true;
    for (int size : {1, 2, 4, 8, 16}) {
        int n = fit[{size, smems[0]}];
        if (n <= 0) continue;
        for (int clusters : {n, n + 1}) {
            cudaLaunchAttribute attr[1];
            cudaLaunchConfig_t c = config(clusters, size, smems[0], attr);
            std::vector<double> spans;
            std::vector<unsigned long long> h(3 * clusters * size);
            for (int rep = 0; rep < 5; ++rep) {
                CHECK(cudaLaunchKernelEx(&c, spin, ns, rec));
                CHECK(cudaDeviceSynchronize());
                CHECK(cudaMemcpy(h.data(), rec, h.size() * 8, cudaMemcpyDeviceToHost));
                unsigned long long lo = ~0ull, hi = 0;
                for (int b = 0; b < clusters * size; ++b) {
                    lo = h[3 * b + 1] < lo ? h[3 * b + 1] : lo;
                    hi = h[3 * b + 2] > hi ? h[3 * b + 2] : hi;
                }
                spans.push_back((hi - lo) / 1000.0);
            }
            // The GPCs as the largest resident clusters see them: each cluster's SMs share one.
            std::set<unsigned> sms;
            for (int b = 0; b < clusters * size; ++b) sms.insert((unsigned)h[3 * b]);
            double best = spans[0];
            for (double s : spans) best = s < best ? s : best;
            printf("%s\n  {\"cluster\": %d, \"clusters\": %d, \"span_us\": %.2f, \"distinct_sms\": %zu",
                   first ? "" : ",", size, clusters, best, sms.size());
            first = false;
            if (size == 16 || (size == 8 && clusters == n)) {
                printf(", \"cluster_sms\": [");
                for (int k = 0; k < clusters; ++k) {
                    printf("%s[", k ? ", " : "");
                    for (int j = 0; j < size; ++j)
                        printf("%s%llu", j ? ", " : "", h[3 * (k * size + j)]);
                    printf("]");
                }
                printf("]");
            }
            printf("}");
        }
    }
    printf("\n ]\n}\n");
    return 0;
}

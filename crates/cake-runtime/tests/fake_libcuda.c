/* A stand-in for libcuda with the driver entry points cake-runtime uses, for CPU-only tests
 * of the launch path (python/tests/test_package.py builds it with `cc -shared` and runs Python
 * with it first on LD_LIBRARY_PATH). Every call is appended to $FAKE_CUDA_LOG as one line; the
 * call named in $FAKE_CUDA_FAIL returns CUDA_ERROR_INVALID_IMAGE (200). Layouts follow cuda.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;

typedef struct {
    int id;
    char pad[4];
    union {
        char pad[64];
        struct { unsigned x, y, z; } clusterDim;
    } value;
} CUlaunchAttribute;

typedef struct {
    unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned numAttrs;
} CUlaunchConfig;

static CUcontext current = 0;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void logf_(const char *fmt, ...) {
    const char *path = getenv("FAKE_CUDA_LOG");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

static int fails(const char *name) {
    const char *v = getenv("FAKE_CUDA_FAIL");
    return v && strcmp(v, name) == 0;
}

CUresult cuInit(unsigned flags) { logf_("cuInit %u", flags); return 0; }

CUresult cuGetErrorName(CUresult e, const char **s) {
    *s = e == 200 ? "CUDA_ERROR_INVALID_IMAGE" : e == 912 ? "CUDA_ERROR_INVALID_CLUSTER_SIZE" : "CUDA_ERROR_UNKNOWN";
    return 0;
}

CUresult cuGetErrorString(CUresult e, const char **s) {
    *s = e == 200 ? "device kernel image is invalid" : "unknown error";
    return 0;
}

CUresult cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return 0; }

CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    *v = attr == 16 ? 132 : attr == 75 ? 9 : attr == 76 ? 0 : 0;
    return 0;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, int dev) {
    *ctx = (CUcontext)(uintptr_t)(0xC0000 + dev);
    logf_("cuDevicePrimaryCtxRetain %d", dev);
    return 0;
}

CUresult cuCtxGetCurrent(CUcontext *ctx) { *ctx = current; return 0; }

CUresult cuCtxSetCurrent(CUcontext ctx) {
    current = ctx;
    logf_("cuCtxSetCurrent %#lx", (unsigned long)(uintptr_t)ctx);
    return 0;
}

CUresult cuModuleLoadData(CUmodule *m, const void *image) {
    logf_("cuModuleLoadData ctx=%#lx image=%.3s", (unsigned long)(uintptr_t)current,
          (const char *)image + 1);
    if (fails("cuModuleLoadData")) return 200;
    *m = (CUmodule)0x2000;
    return 0;
}

CUresult cuModuleUnload(CUmodule m) {
    logf_("cuModuleUnload %#lx", (unsigned long)(uintptr_t)m);
    return 0;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    logf_("cuModuleGetFunction %s", name);
    (void)m;
    *f = (CUfunction)0x3000;
    return 0;
}

CUresult cuFuncSetAttribute(CUfunction f, int attr, int value) {
    (void)f;
    logf_("cuFuncSetAttribute %d %d", attr, value);
    return 0;
}

CUresult cuFuncGetAttribute(int *v, int attr, CUfunction f) {
    (void)f;
    *v = 1000 + attr;
    return 0;
}

CUresult cuTensorMapEncodeTiled(void *tm, int dtype, unsigned rank, void *addr,
                                const uint64_t *dim, const uint64_t *strides, const uint32_t *box,
                                const uint32_t *estr, int interleave, int swizzle, int l2,
                                int oob) {
    char text[512];
    int n = snprintf(text, sizeof text, "cuTensorMapEncodeTiled aligned=%d dtype=%d rank=%u addr=%#lx dim=",
                     (int)((uintptr_t)tm % 64 == 0), dtype, rank, (unsigned long)(uintptr_t)addr);
    for (unsigned i = 0; i < rank; i++) n += snprintf(text + n, sizeof text - n, "%s%lu", i ? "," : "", (unsigned long)dim[i]);
    n += snprintf(text + n, sizeof text - n, " strides=");
    for (unsigned i = 0; i + 1 < rank; i++) n += snprintf(text + n, sizeof text - n, "%s%lu", i ? "," : "", (unsigned long)strides[i]);
    n += snprintf(text + n, sizeof text - n, " box=");
    for (unsigned i = 0; i < rank; i++) n += snprintf(text + n, sizeof text - n, "%s%u", i ? "," : "", box[i]);
    n += snprintf(text + n, sizeof text - n, " estr=");
    for (unsigned i = 0; i < rank; i++) n += snprintf(text + n, sizeof text - n, "%s%u", i ? "," : "", estr[i]);
    snprintf(text + n, sizeof text - n, " interleave=%d swizzle=%d l2=%d oob=%d", interleave, swizzle, l2, oob);
    logf_("%s", text);
    if (fails("cuTensorMapEncodeTiled")) return 200;
    memset(tm, 0, 128);
    memcpy(tm, &addr, sizeof addr); /* the test reads the address back from the parameter */
    return 0;
}

/* $FAKE_CUDA_MAX_CLUSTERS clusters fit at once (default 64). */
CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *c) {
    /* As the driver: the grid must be a whole number of clusters (CUDA_ERROR_INVALID_CLUSTER_SIZE). */
    unsigned cx = c->numAttrs ? c->attrs[0].value.clusterDim.x : 1;
    if (cx == 0 || c->gridDimX % cx != 0) {
        logf_("cuOccupancyMaxActiveClusters grid=%u cluster=%u -> 912", c->gridDimX, cx);
        return 912;
    }
    const char *m = getenv("FAKE_CUDA_MAX_CLUSTERS");
    *n = m ? atoi(m) : 64;
    logf_("cuOccupancyMaxActiveClusters f=%#lx block=%u smem=%u cluster=%u -> %d",
          (unsigned long)(uintptr_t)f, c->blockDimX, c->sharedMemBytes,
          c->numAttrs ? c->attrs[0].value.clusterDim.x : 1, *n);
    return 0;
}

/* $FAKE_CUDA_CTAS_PER_SM CTAs fit on one SM (default 1). */
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int threads, size_t smem) {
    const char *m = getenv("FAKE_CUDA_CTAS_PER_SM");
    *n = m ? atoi(m) : 1;
    logf_("cuOccupancyMaxActiveBlocksPerMultiprocessor f=%#lx threads=%d smem=%zu -> %d",
          (unsigned long)(uintptr_t)f, threads, smem, *n);
    return 0;
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    char text[1024];
    int n = snprintf(text, sizeof text,
                     "cuLaunchKernelEx ctx=%#lx f=%#lx grid=%u,%u,%u block=%u,%u,%u smem=%u stream=%#lx attrs=%u",
                     (unsigned long)(uintptr_t)current, (unsigned long)(uintptr_t)f, c->gridDimX,
                     c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                     c->sharedMemBytes, (unsigned long)(uintptr_t)c->hStream, c->numAttrs);
    for (unsigned i = 0; i < c->numAttrs; i++)
        n += snprintf(text + n, sizeof text - n, " attr%d=%u,%u,%u", c->attrs[i].id,
                      c->attrs[i].value.clusterDim.x, c->attrs[i].value.clusterDim.y,
                      c->attrs[i].value.clusterDim.z);
    /* The first 8 bytes of the first $FAKE_CUDA_NPARAMS parameters. */
    const char *np = getenv("FAKE_CUDA_NPARAMS");
    int count = np ? atoi(np) : 0;
    n += snprintf(text + n, sizeof text - n, " params=");
    for (int i = 0; i < count; i++) {
        uint64_t v;
        memcpy(&v, params[i], sizeof v);
        n += snprintf(text + n, sizeof text - n, "%s%#lx", i ? "," : "", (unsigned long)v);
    }
    logf_("%s extra=%p", text, (void *)extra);
    return 0;
}

CUresult cuMemsetD8Async(unsigned long long ptr, unsigned char value, size_t bytes, CUstream s) {
    logf_("cuMemsetD8Async ctx=%#lx ptr=%#llx value=%u bytes=%zu stream=%#lx",
          (unsigned long)(uintptr_t)current, ptr, value, bytes, (unsigned long)(uintptr_t)s);
    return fails("cuMemsetD8Async") ? 200 : 0;
}

/* Every stream is being captured into a CUDA graph while $FAKE_CUDA_CAPTURING is set. */
CUresult cuStreamIsCapturing(CUstream s, int *status) {
    logf_("cuStreamIsCapturing stream=%#lx", (unsigned long)(uintptr_t)s);
    *status = getenv("FAKE_CUDA_CAPTURING") ? 1 : 0;
    return fails("cuStreamIsCapturing") ? 200 : 0;
}

CUresult cuCtxResetPersistingL2Cache(void) {
    logf_("cuCtxResetPersistingL2Cache ctx=%#lx", (unsigned long)(uintptr_t)current);
    return fails("cuCtxResetPersistingL2Cache") ? 200 : 0;
}

/* Device memory: fake addresses from 0xd0000000 up, 16 MiB apart; nothing is backed. */
static unsigned long long next_alloc = 0xd0000000ull;

CUresult cuMemAlloc_v2(unsigned long long *ptr, size_t bytes) {
    *ptr = next_alloc;
    next_alloc += 1ull << 24;
    logf_("cuMemAlloc ctx=%#lx bytes=%zu -> %#llx", (unsigned long)(uintptr_t)current, bytes, *ptr);
    return fails("cuMemAlloc") ? 200 : 0;
}

CUresult cuMemFree_v2(unsigned long long ptr) {
    logf_("cuMemFree ctx=%#lx ptr=%#llx", (unsigned long)(uintptr_t)current, ptr);
    return 0;
}

CUresult cuMemAllocAsync(unsigned long long *ptr, size_t bytes, CUstream s) {
    *ptr = next_alloc;
    next_alloc += 1ull << 24;
    logf_("cuMemAllocAsync ctx=%#lx bytes=%zu stream=%#lx -> %#llx",
          (unsigned long)(uintptr_t)current, bytes, (unsigned long)(uintptr_t)s, *ptr);
    return fails("cuMemAllocAsync") ? 200 : 0;
}

CUresult cuMemFreeAsync(unsigned long long ptr, CUstream s) {
    logf_("cuMemFreeAsync ctx=%#lx ptr=%#llx stream=%#lx", (unsigned long)(uintptr_t)current, ptr,
          (unsigned long)(uintptr_t)s);
    return 0;
}

"""K-means centroid update for Hopper from unsorted ids, by global atomic adds: one pass over X

    SUMS[b, k, :] = Σ X[b, n, :] over the rows n with IDS[b, n] = k      (f32)
    COUNTS[b, k]  = the number of those rows                             (i32)

Each CTA takes ROWS rows of one batch; a warp holds a row in registers (bf16 read as f32) and adds
it into its cluster's sums with `lm.scatter_add`: 16-byte `red.global.add.v4.f32` per eight
columns, and one `red.global.add` on the count. The launcher zeroes SUMS and COUNTS first
(`zero=`), so the kernel reads X and IDS once and its cost grows with B·N·D, whatever K is — the
tiled schedule (kmeans_update_sm90.py) re-reads X once per block of 256 centroids. The adds
meet at L2 in no fixed order, so the sums may differ in their last bits from run to run.
Rows past N read the index -1 (`fill=-1`), which no cluster has: they add nothing.
"""
import cake
from cake import lm

D = 128          # feature dimension (specialised per shape by the family's contract)
ROWS = 16        # rows per CTA: four per warp
EVICT_FIRST = 0  # 1: X's and IDS's lines (read once) leave L2 first, SUMS's stay
X_EVICT = "first" if EVICT_FIRST == 1 else None


@cake.schedule(targets=["sm_90a"], zero=["SUMS", "COUNTS"])
def kmeans_update_atomic(X: lm.tensor[lm.bf16, "B", "N", D],
                         Cen: lm.tensor[lm.bf16, "B", "K", D],
                         IDS: lm.tensor[lm.i32, "B", "N"],
                         SUMS: lm.tensor[lm.f32, "B", "K", D],
                         COUNTS: lm.tensor[lm.i32, "B", "K"]):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(ROWS, D), dtype=lm.f32, rows="warp")
    for b, t in lm.tiles(B, lm.cdiv(N, ROWS)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(b, t * ROWS, 0), shape=(ROWS, D), evict=X_EVICT), lm.f32)
            ids = lm.load(IDS, coords=(b, t * ROWS), shape=(ROWS,), fill=-1, evict=X_EVICT)
            lm.scatter_add(SUMS, x, index=ids, coords=(b, 0, 0), counts=COUNTS)
    del Cen  # in the signature for the usual API; the kernel never reads it

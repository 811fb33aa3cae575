/*
 * matmul_cuda_plan.h - the plan of a CUDA matmul job: tile edges, K panel depth, device
 * buffers, pinned staging, decided from the budgets before any device is touched (the
 * device's memory figures come in as data), so tests check plans without a GPU and --plan
 * prints one without running it.
 *
 * On each device:
 *   panel slots  2 x (A panel tm x kp + B panel kp x tn), in the input type (an operand
 *                stored in a narrower type, a mixed pair's: as stored): one uploads while
 *                cuBLASLt reads the other
 *   promoted     a mixed pair only: the panels uploaded as stored, converted to the input
 *                type on the device (fewer bytes across PCIe and through the host's copies)
 *   int8 only    the A panel re-strided to kpad (a multiple of 16) and the B panel transposed
 *                to tn_ld x kpad, the layouts of cuBLASLt's integer kernels ("TN")
 *   accumulators 2 x tm x tn_ld in the accumulation type: one accumulates the K panels in
 *                place (beta 0 for the first panel, 1 after) while the other downloads
 *   rounded      FP16/BF16 output only: 2 x tm x tn, the accumulator rounded once at the end
 *   workspace    cuBLASLt's, one fixed size for the whole job
 * Operands and result already in the device's memory (in.resident) need none of the slots:
 * the plan is then the whole product as one tile and one panel, computed into C from where A
 * and B are, transposed by cuBLASLt's operations where op(X) = Xᵀ (int8, whose kernels take
 * both operands K-contiguous: B transposed and A re-strided or transposed beside them where
 * they are not; an FP16/BF16 result: one float32 accumulator rounded into C; A·Aᵀ: the whole
 * product, mirrored), unless those buffers do not fit the budget, when the plan is the usual
 * one with panels copied on the device.
 * On the host, per device: 4 (or 2) pinned upload slots of whole rows of a panel, at most
 * OC_MM_UP_PIECE each (read_panel fills one while the ones before it upload), and 2 pinned
 * download slots of a piece of a tile (out_piece_rows rows): a panel goes up and a finished
 * tile comes down piece by piece, one piece copying while the next is read or written, so
 * the pinned memory grows neither with the tile edge nor with the panel depth, and both are
 * bounded by the device's memory, not the host's.
 *
 * Which changes of the plan change float results, and why: a tile's element is the sum over
 * K of products, computed as one cuBLASLt call per K panel added into the accumulator. The
 * panel depth kp decides where those partial sums are rounded into the accumulator, and the
 * tile shape (tm, tn_ld, and each panel's depth) decides which cuBLASLt algorithm the
 * heuristic picks, whose blocking (and split-K, if any) sets the summation order inside a
 * call. So another tile edge or panel depth (another --gpu-mem, host budget or forced tile)
 * may change the last bits of float results; int8 sums are exact whatever the plan. The
 * number of devices does not: every tile is computed whole on one device with the algorithm
 * chosen once for its shape, and identical devices choose the same one.
 */
#ifndef OC_MATMUL_CUDA_MATMUL_CUDA_PLAN_H
#define OC_MATMUL_CUDA_MATMUL_CUDA_PLAN_H

#include <stdint.h>

#include "matmul/matmul_job.h"

/* cuBLASLt's workspace: this much, or an eighth of a smaller device budget. */
#define OC_MM_WORKSPACE (32LL << 20)
/* The largest tile edge planned. A tile reads its rows of A and columns of B once per tile
 * across C, so the host copies and PCIe carry (tm + tn) x k per 2 tm tn k operations: a
 * larger edge cuts them in proportion, which several devices sharing one host's memory
 * bandwidth need; past this edge two accumulators take most of a device. */
#define OC_MM_TILE_MAX 32768
/* The tiles shrink until there are four on one device when the result outweighs the
 * operands (the download and writing of one tile then overlap the products of the next,
 * where a single tile would wait for them) and, on several, the same number for each device
 * and at least two each, or eight each, but not below this edge: smaller tiles would cost
 * more in re-read panels than they hide. */
#define OC_MM_SHARE_MIN 2048
/* Tile edges are first sought among even cuts of the product (whole / j) that fit with K
 * panels of OC_MM_KP_GOOD, down to OC_MM_EVEN_MIN; below it the largest edge that fits with
 * the shallowest panels. At this depth a cuBLASLt call re-reads its accumulator for a few
 * percent of its time. */
#define OC_MM_KP_GOOD 1024
#define OC_MM_EVEN_MIN 1024
/* The most bytes of one download piece (a slot of pinned memory the finished tiles come
 * down through): large enough for the copy engine's full rate, small enough that two of them
 * are a small share of any host budget. */
#define OC_MM_OUT_PIECE (64LL << 20)
/* Pinned download slots per device: one downloading while the other is written. */
#define OC_MM_OUT_SLOTS 2
/* The most bytes of one upload piece: the panels go up through pinned slots of this size,
 * whole rows of an operand's panel a piece, read in turn while the pieces before them are
 * uploaded. Large enough for the copy engine's full rate and to keep the calls few; small
 * enough that the slots pin in a few milliseconds, before a device's first product. */
#define OC_MM_UP_PIECE (32LL << 20)
/* Pinned upload slots per device where the host budget has room (else 2): reads that take
 * their time now and then have a few pieces of slack before the uploads wait. */
#define OC_MM_UP_SLOTS 4
/* The most bytes of one device panel slot (A and B panels of one K panel) when the panel is
 * deeper than the shallowest: deeper panels only shave the accumulator's re-reads between
 * calls (a few percent at this size). */
#define OC_MM_PANEL_MAX (512LL << 20)
/* The plan's model of a job, to choose among the tile edges that fit (oc_mm_cuda_plan_make):
 * products at the GPU's GEMM rate (cost_gemm.h's Hopper figure for the type, the same on
 * every machine so that a plan, and so the bits, depend on the job and its budgets alone),
 * each cuBLASLt call costing OC_MM_MODEL_CALL_K more of K depth over its tile (its prologue
 * and epilogue per output tile, measured: bench/RESULTS.md, "matmul out of core: K panels
 * against tiles"); copies at OC_MM_MODEL_LINK each way and
 * through the host's memory at OC_MM_MODEL_HOST (pageable operands staged); the first panel's
 * upload and the last tile's download unhidden. Among the edges whose copies take at most
 * OC_MM_MODEL_MARGIN of the products' time (the job stays bound by its products, whatever the
 * host), the fastest predicted; with none, the largest tile, unless a smaller one reads fewer
 * bytes of A and B by more than OC_MM_FEWER_READS. Where a square edge does not share well
 * among the devices, the rectangles of that edge by half of it are tried too (not for a
 * symmetric product): on four devices 65536 x 65536 cuts into 8 tiles of 32768 x 16384, two
 * a device, where squares would be 16 of 16384, which read a third more of A and B through
 * the host. */
#define OC_MM_MODEL_LINK 50e9
#define OC_MM_MODEL_HOST 40e9
#define OC_MM_MODEL_CALL_K 400.0
#define OC_MM_MODEL_MARGIN 0.5
#define OC_MM_FEWER_READS 0.97
/* The smallest K panel planned where k is larger, and the deepest: past it a panel only
 * delays the first product and takes pinned memory, with nothing left to gain per call. */
#define OC_MM_KP_MIN 256
#define OC_MM_KP_MAX 8192

typedef struct oc_mm_cuda_plan_input {
    int64_t m, n, k;
    oc_mm_type in_type, out_type;
    int tf32, symmetric;
    int64_t device_budget;   /* bytes per device */
    int device_budget_given; /* from the job (--gpu-mem), not the devices' free memory */
    int64_t host_budget;     /* pinned bytes for all devices together */
    int ndevices;
    int64_t tile; /* forced tile edge, 0 = planned */
    /* A, B and C in the one device's memory, rows back to back (int8: n a multiple of 4): the
     * plan is one tile, one K panel, the product computed into C from A and B where they are,
     * op(A) = Aᵀ when ta and op(B) = Bᵀ when tb (A·Aᵀ: B is A, tb set; C mirrored after). */
    int resident, ta, tb;
    /* Resident: A's (B's) memory does not start on a 16-byte boundary; int8 then packs it. */
    int a_unaligned, b_unaligned;
    /* A's (0) and B's (1) stored type where its panels are uploaded as stored and promoted to
     * in_type on the device (oc_matmul_widens), else OC_MATMUL_DEFAULT. */
    oc_matmul_dtype from[2];
} oc_mm_cuda_plan_input;

typedef struct oc_mm_cuda_plan {
    oc_mm_cuda_plan_input in;
    oc_mm_type acc_type;                          /* the accumulator's type on the device */
    int64_t tm, tn, kp;                           /* tile edges and K panel depth */
    int64_t kp_last;                              /* the depth of the last K panel */
    int64_t tn_ld;                                /* leading dimension of an accumulator (int8: a multiple of 4) */
    int64_t kpad;                                 /* int8: K stride of the packed panels (a multiple of 16); else kp */
    int64_t tile_rows, tile_cols, ntiles, panels; /* the grid, tiles computed, K panels per tile */
    int64_t elem[2];                              /* bytes of an uploaded element of A's and B's panels */
    int64_t panel_bytes; /* one panel slot: the A panel, then the B panel at oc_mm_cuda_b_offset */
    /* The promoted panels (in_type): A's at 0, then B's at oc_mm_cuda_b_offset of A's (0 when
     * A is not promoted); 0 when neither is. */
    int64_t promoted_bytes;
    int64_t pack_bytes; /* int8: the packed A and B panels (resident: B's only when whole) */
    int pack_a, pack_b; /* resident int8: A, B packed (else read as stored) */
    /* Resident int8 with B packed: the columns of C (rows of the packed Bᵀ) per chunk, B packed
     * a chunk at a time into two buffers while the product of the chunk before runs; 0: B
     * packed whole. */
    int64_t b_chunk;
    int64_t chunk_bytes; /* the two chunks' buffers, in the block kept with the workspace */
    int64_t acc_bytes;   /* one accumulator */
    int64_t round_bytes; /* one rounded tile (FP16/BF16 output), else 0 */
    int64_t workspace;
    int64_t device_bytes;   /* everything above, per device */
    int up_slots;           /* pinned upload slots */
    int64_t up_slot_bytes;  /* one pinned upload slot: whole rows of an operand's panel */
    int64_t out_piece_rows; /* rows of a tile in one download piece */
    int64_t out_slot_bytes; /* one pinned download slot: out_piece_rows rows of a tile */
    int64_t pinned_bytes;   /* per device */
    int64_t host_budget;    /* per device */
    const char *bound;      /* what bounds the tile edge */
} oc_mm_cuda_plan;

/* Below this many multiply-adds an int8 shape keeps the heuristic's first algorithm
 * (matmul_gemm.c): measuring would cost more than it could save, and the cache would fill
 * with small shapes. A resident product's B is packed in chunks only when each chunk's
 * product stays above it. */
#define OC_MM_TUNE_MIN_MACS (1LL << 36)

/* The accumulation type of (in, out) and the name of cuBLASLt's compute type; OC_ERR_UNSUPPORTED
 * naming the pair when cuBLASLt has no product for it. */
oc_status oc_mm_cuda_types(oc_context *ctx, oc_mm_type in, oc_mm_type out, int tf32, oc_mm_type *acc,
                           const char **compute);

/* Plans the job; OC_ERR_DEVICE_NO_MEMORY naming the budgets when not even the smallest tile
 * fits them, OC_ERR_INVALID_ARGUMENT for a shape that cannot be (symmetric but m != n). */
oc_status oc_mm_cuda_plan_make(oc_context *ctx, const oc_mm_cuda_plan_input *in, oc_mm_cuda_plan *plan);

/* The plan as text (json 0) or one JSON object; `where` names the devices. *out is malloc'd. */
oc_status oc_mm_cuda_plan_render(oc_context *ctx, const oc_mm_cuda_plan *plan, const char *where, int json, char **out);

/* Tile t of the plan's order (row by row; symmetric: the upper tiles col >= row only). */
/* Where a panel slot's B panel starts, after an A panel of a_bytes: 256-byte aligned, as
 * cuBLASLt's heuristic assumes of every operand by default. */
static inline int64_t oc_mm_cuda_b_offset(int64_t a_bytes) { return (a_bytes + 255) / 256 * 256; }

/* The leading dimension (elements) of the accumulator of a tile `cols` wide: cols, rounded up
 * to a multiple of 4 for int8 (cuBLASLt's integer kernels). */
static inline int64_t oc_mm_cuda_ldc(const oc_mm_cuda_plan *plan, int64_t cols)
{
    return plan->in.in_type == OC_MM_INT8 ? (cols + 3) / 4 * 4 : cols;
}

void oc_mm_cuda_plan_tile(const oc_mm_cuda_plan *plan, int64_t t, int64_t *row0, int64_t *rows, int64_t *col0,
                          int64_t *cols);

#endif

/*
 * matmul_device.h - one device's share of a CUDA matmul job: three threads around one
 * cuBLASLt handle, pulling tiles from the queue all devices share.
 *
 *   reader  (matmul_reader.c) claims the next tile (an atomic counter over the plan's tile
 *           order), and for each of its K panels, once the driver has put the products that
 *           last read the next of the two device panel slots on the compute stream, uploads
 *           A's and B's panels into it on the copy stream: read_panel reads whole rows a
 *           piece into the pinned upload slots in turn (the rows cut among the device's share
 *           of the host's threads, its read crew), each piece uploaded while the next is
 *           read; a panel already in page-locked or device caller memory as the product takes
 *           it (panel_memory) is uploaded from there without a read
 *   driver  (matmul_device.c, the device's thread) takes each uploaded panel and on the
 *           compute stream (a mixed pair: converts the operand uploaded as stored to the
 *           compute type; int8: packs the panels) runs cuBLASLt into the tile's accumulator,
 *           beta 0 on the first panel and 1 after; after the last panel (FP16/BF16 output:
 *           rounds it) hands the tile to the writer
 *   writer  (matmul_writer.c) downloads each finished tile piece by piece through two pinned
 *           download slots on the download stream and hands each piece to write_tile (cut
 *           among its write crew) while the next piece downloads; a tile whose place is
 *           page-locked caller memory (tile_memory) is downloaded there whole, without a
 *           slot or write_tile
 * The state they share, and the steps all three take, are matmul_device_state.h's.
 * Events order the streams: an upload waits for the computation that last read its device
 * slot (the reader first waits until the driver has put it on its stream), a piece's read
 * for the upload of the piece that last used its pinned slot, a tile's first product for the
 * download of the accumulator it reuses (the driver first waits until the writer has put
 * that download on its stream). The reader reads ahead while the device computes, the
 * copies overlap the products, and write_tile runs beside both. Each pinned slot is pinned
 * by the thread that first needs it.
 */
#ifndef OC_MATMUL_CUDA_MATMUL_DEVICE_H
#define OC_MATMUL_CUDA_MATMUL_DEVICE_H

#include "matmul/cuda/matmul_device_state.h"

/* Runs the device's share on the calling thread with its own context ctx (whose pinned
 * staging comes from the job's context's cache); fills *res. */
void oc_mm_device_run(oc_context *ctx, oc_mm_shared *sh, int device, oc_mm_device_result *res);

#endif

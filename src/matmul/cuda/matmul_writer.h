/*
 * matmul_writer.h - the writer of a device's share of a CUDA matmul job (matmul_device.h):
 * downloads each finished tile piece by piece and writes it in its place.
 */
#ifndef OC_MATMUL_CUDA_MATMUL_WRITER_H
#define OC_MATMUL_CUDA_MATMUL_WRITER_H

/* The writer thread's body; `device` is the oc_mm_device. */
void *oc_mm_writer_main(void *device);

#endif

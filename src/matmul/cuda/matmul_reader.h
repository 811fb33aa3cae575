/*
 * matmul_reader.h - the reader of a device's share of a CUDA matmul job (matmul_device.h):
 * claims tiles from the queue and puts each K panel's uploads on the copy stream.
 */
#ifndef OC_MATMUL_CUDA_MATMUL_READER_H
#define OC_MATMUL_CUDA_MATMUL_READER_H

/* The reader thread's body; `device` is the oc_mm_device. */
void *oc_mm_reader_main(void *device);

#endif

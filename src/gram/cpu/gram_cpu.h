/*
 * gram_cpu.h - what the CPU backends (dense gram_cpu.c, sparse gram_sparse.c) share.
 */
#ifndef OC_GRAM_CPU_GRAM_CPU_H
#define OC_GRAM_CPU_GRAM_CPU_H

#include "gram/gram_job.h"
#include "gram/cpu/kernels/kernel.h"

/* The epilogue that turns the job's counts into its result (metric and dtype); unused for
 * int32 counts, which are the counts themselves. */
oc_epilogue_kind oc_cpu_epilogue_kind(const oc_gram_job *job);

#endif

/* gram_cuda.h - the CUDA backend's Gram job: gram_devices.c runs it over the job's logical
 * devices, one part (gram_cuda.c) per device. */
#ifndef OC_GRAM_CUDA_GRAM_CUDA_H
#define OC_GRAM_CUDA_GRAM_CUDA_H

#include "gram/gram_job.h"

/* Runs job on its logical devices (job->devices; none: job->opts->device); blocks until the
 * result is delivered. */
oc_status oc_cuda_gram(oc_gram_job *job);

/* The plan the job would run under, rendered as text or JSON into *out (caller frees),
 * without running it: opens the device for its figures and allocates nothing on it. */
oc_status oc_cuda_gram_plan(oc_gram_job *job, int json, char **out);

#endif

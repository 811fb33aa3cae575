/*
 * nvrtc_program.h - a program for NVRTC: the source asked for and the compiled image, as
 * nvrtc.h compiles them and nvrtc_cache.h keys and stores them.
 */
#ifndef OC_MAP_CUDA_NVRTC_PROGRAM_H
#define OC_MAP_CUDA_NVRTC_PROGRAM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Compiled code for one target. data is malloc'd (oc_nvrtc_image_free). */
typedef struct oc_nvrtc_image {
    void *data;
    size_t size;
    int is_cubin;   /* 1: cubin for sm_<cc>; 0: PTX (NUL-terminated, size counts the NUL) */
    int target;     /* the cc it was compiled for (90 for sm_90 / compute_90) */
    int from_cache; /* 1 when it came from the disk cache (tests check the cache with it) */
} oc_nvrtc_image;

/* A compilation request. options are extra NVRTC options (e.g. "-DN=4", "--use_fast_math");
 * "--gpu-architecture" (from cc) and "--std=c++17" are always given, so options must not
 * repeat them. name names the program in messages and logs. Kernels are looked up by name:
 * declare them extern "C" (no C++ name mangling). */
typedef struct oc_nvrtc_source {
    const char *name;
    const char *code;
    const char *const *options;
    int noptions;
} oc_nvrtc_source;

#ifdef __cplusplus
}
#endif

#endif

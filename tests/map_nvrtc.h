/*
 * map_nvrtc.h - NVRTC loaded with dlopen, for the tests of map's CUDA source (the library
 * itself never loads NVRTC: the GPU path's loader does). Header only: two tests include it.
 */
#ifndef OC_TESTS_MAP_NVRTC_H
#define OC_TESTS_MAP_NVRTC_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*map_nvrtc_create_fn)(void **prog, const char *src, const char *name, int nh, const char *const *h,
                                   const char *const *names);
typedef int (*map_nvrtc_compile_fn)(void *prog, int nopt, const char *const *opts);
typedef int (*map_nvrtc_size_fn)(void *prog, size_t *size);
typedef int (*map_nvrtc_text_fn)(void *prog, char *text);
typedef int (*map_nvrtc_destroy_fn)(void **prog);

static struct {
    map_nvrtc_create_fn create;
    map_nvrtc_compile_fn compile;
    map_nvrtc_size_fn log_size, ptx_size;
    map_nvrtc_text_fn log, ptx;
    map_nvrtc_destroy_fn destroy;
} map_nvrtc;

/* 1 when NVRTC is found ($CUDA_HOME/lib64, the loader's path, /usr/local/cuda/lib64). */
static int map_nvrtc_load(void)
{
    const char *names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so",
                           NULL};
    void *h = NULL;
    char buf[512];
    const char *home = getenv("CUDA_HOME");
    if (home) {
        snprintf(buf, sizeof buf, "%s/lib64/libnvrtc.so", home);
        h = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
    }
    for (int i = 0; !h && names[i]; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    map_nvrtc.create = (map_nvrtc_create_fn)dlsym(h, "nvrtcCreateProgram");
    map_nvrtc.compile = (map_nvrtc_compile_fn)dlsym(h, "nvrtcCompileProgram");
    map_nvrtc.log_size = (map_nvrtc_size_fn)dlsym(h, "nvrtcGetProgramLogSize");
    map_nvrtc.log = (map_nvrtc_text_fn)dlsym(h, "nvrtcGetProgramLog");
    map_nvrtc.ptx_size = (map_nvrtc_size_fn)dlsym(h, "nvrtcGetPTXSize");
    map_nvrtc.ptx = (map_nvrtc_text_fn)dlsym(h, "nvrtcGetPTX");
    map_nvrtc.destroy = (map_nvrtc_destroy_fn)dlsym(h, "nvrtcDestroyProgram");
    return map_nvrtc.create && map_nvrtc.compile && map_nvrtc.log_size && map_nvrtc.log && map_nvrtc.ptx_size &&
           map_nvrtc.ptx && map_nvrtc.destroy;
}

/* The PTX of src for arch ("compute_80"), malloc'ed; NULL after printing NVRTC's log (and the
 * source) under the heading `what` (what == NULL: nothing printed). */
static char *map_nvrtc_compile(const char *src, const char *arch, const char *what)
{
    void *prog = NULL;
    if (map_nvrtc.create(&prog, src, "map.cu", 0, NULL, NULL) != 0) return NULL;
    char opt[64];
    snprintf(opt, sizeof opt, "--gpu-architecture=%s", arch);
    const char *opts[] = {opt};
    char *ptx = NULL;
    size_t n = 0;
    if (map_nvrtc.compile(prog, 1, opts) != 0) {
        map_nvrtc.log_size(prog, &n);
        char *log = malloc(n + 1);
        if (log && what && map_nvrtc.log(prog, log) == 0)
            fprintf(stderr, "%s:\n%s\n--- source ---\n%s\n", what, log, src);
        free(log);
    } else if (map_nvrtc.ptx_size(prog, &n) == 0 && (ptx = malloc(n + 1)) != NULL && map_nvrtc.ptx(prog, ptx) != 0) {
        free(ptx);
        ptx = NULL;
    }
    map_nvrtc.destroy(&prog);
    return ptx;
}

#endif

/* nvrtc_cache.c - keys and the disk cache of compiled programs (nvrtc_cache.h). */
#include "map/cuda/nvrtc_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash.h"

/* Both hashes over the same fields; a separator byte after each string keeps ("ab", "c")
 * and ("a", "bc") apart. */
static uint64_t key_hash(uint64_t seed, const oc_nvrtc_source *src, int target, int cubin, int version)
{
    static const unsigned char sep = 0;
    uint64_t h = oc_fnv1a(seed, src->code, strlen(src->code));
    h = oc_fnv1a(h, &sep, 1);
    for (int i = 0; i < src->noptions; ++i) {
        h = oc_fnv1a(h, src->options[i], strlen(src->options[i]));
        h = oc_fnv1a(h, &sep, 1);
    }
    int32_t tail[3] = {target, cubin, version};
    return oc_fnv1a(h, tail, sizeof tail);
}

void oc_nvrtc_key_make(const oc_nvrtc_source *src, int target, int cubin, int nvrtc_version, oc_nvrtc_key *key)
{
    memset(key, 0, sizeof *key);
    key->name_hash = key_hash(14695981039346656037ULL, src, target, cubin, nvrtc_version);
    key->check_hash = key_hash(0x9e3779b97f4a7c15ULL, src, target, cubin, nvrtc_version);
    key->source_len = strlen(src->code);
    key->target = target;
    key->cubin = cubin;
}

int oc_nvrtc_key_equal(const oc_nvrtc_key *a, const oc_nvrtc_key *b)
{
    return a->name_hash == b->name_hash && a->check_hash == b->check_hash && a->source_len == b->source_len &&
           a->target == b->target && a->cubin == b->cubin;
}

/* mkdir -p of an absolute path; 0 when it exists afterwards. */
static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; ++p)
        if (*p == '/') {
            *p = '\0';
            int r = mkdir(path, 0755);
            *p = '/';
            if (r != 0 && errno != EEXIST) return -1;
        }
    return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

int oc_nvrtc_cache_dir(char *buf, size_t size)
{
    const char *env = getenv("OUTCORE_NVRTC_CACHE");
    int n;
    if (env) {
        if (!*env || strcmp(env, "off") == 0) return 0;
        n = snprintf(buf, size, "%s", env);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg == '/') n = snprintf(buf, size, "%s/outcore/nvrtc", xdg);
        else if (home && *home == '/') n = snprintf(buf, size, "%s/.cache/outcore/nvrtc", home);
        else return 0;
    }
    if (n <= 0 || (size_t)n >= size) return 0;
    while (n > 1 && buf[n - 1] == '/') buf[--n] = '\0';
    return 1;
}

static int cache_path(const oc_nvrtc_key *key, char *path, size_t size)
{
    char dir[3000];
    if (!oc_nvrtc_cache_dir(dir, sizeof dir)) return 0;
    int n = snprintf(path, size, "%s/%016llx-%s_%d.bin", dir, (unsigned long long)key->name_hash,
                     key->cubin ? "sm" : "compute", key->target);
    return n > 0 && (size_t)n < size;
}

typedef struct file_header {
    char magic[8];
    uint64_t check_hash, source_len;
    uint32_t is_cubin, target;
    uint64_t size;
} file_header;

int oc_nvrtc_cache_read(const oc_nvrtc_key *key, oc_nvrtc_image *img)
{
    char path[3200];
    if (!cache_path(key, path, sizeof path)) return 0;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    file_header h;
    void *data = NULL;
    int ok = fread(&h, sizeof h, 1, f) == 1 && memcmp(h.magic, "OCNVRTC1", 8) == 0 && h.check_hash == key->check_hash &&
             h.source_len == key->source_len && h.is_cubin == (uint32_t)key->cubin &&
             h.target == (uint32_t)key->target && h.size > 0 && h.size < ((uint64_t)1 << 30) &&
             (data = malloc(h.size)) != NULL && fread(data, h.size, 1, f) == 1 && fgetc(f) == EOF;
    fclose(f);
    if (!ok) {
        free(data);
        return 0;
    }
    memset(img, 0, sizeof *img);
    img->data = data;
    img->size = h.size;
    img->is_cubin = key->cubin;
    img->target = key->target;
    img->from_cache = 1;
    return 1;
}

void oc_nvrtc_cache_write(const oc_nvrtc_key *key, const oc_nvrtc_image *img)
{
    char path[3200], tmp[3300], dir[3000];
    if (!cache_path(key, path, sizeof path) || !oc_nvrtc_cache_dir(dir, sizeof dir) || make_dirs(dir) != 0) return;
    /* A name of this write alone (two threads of a process may write one entry at once),
     * created new: never through a link, never another writer's file truncated. */
    static atomic_uint writes;
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), atomic_fetch_add(&writes, 1));
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return;
    }
    file_header h = {.check_hash = key->check_hash,
                     .source_len = key->source_len,
                     .is_cubin = (uint32_t)key->cubin,
                     .target = (uint32_t)key->target,
                     .size = img->size};
    memcpy(h.magic, "OCNVRTC1", 8);
    int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(img->data, img->size, 1, f) == 1;
    ok = (fclose(f) == 0) && ok;
    /* rename is atomic: a reader sees the old file, none, or the whole new one. */
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

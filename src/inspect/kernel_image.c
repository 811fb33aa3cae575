/*
 * kernel_image.c - recognising GPU code files and choosing which code inside answers.
 *
 * A fatbinary is a 16-byte header (magic 0xBA55ED50, version, header size, payload size)
 * followed by entries, each with its own header:
 *
 *     offset  0  u16 kind (1 = PTX, 2 = ELF cubin)     offset 28  u32 sm (90 for sm_90)
 *     offset  4  u32 entry header size                 offset 40  u64 flags
 *     offset  8  u64 payload size (padded)             offset 56  u64 uncompressed size
 *     offset 16  u32 compressed size (PTX entries keep other data in the 4 bytes after it)
 *
 * Flag 0x2000 marks an LZ4 block (`-compress-mode=speed`), 0x8000 a zstd frame (the
 * default of `-compress-all`). Host objects and executables carry one or more fatbinaries,
 * back to back, in their .nv_fatbin section.
 */
#include "inspect/kernel_image.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/input_file.h"
#include "inspect/elf_read.h"
#include "inspect/cubin.h"
#include "inspect/ptx_directives.h"
#include "inspect/ptxas.h"

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_KIND_PTX 1
#define FATBIN_KIND_ELF 2
#define FATBIN_FLAG_LZ4 0x2000u
#define FATBIN_FLAG_ZSTD 0x8000u
#define EM_CUDA 190
#define ET_REL 1 /* e_type of a relocatable ELF file */

const char *oc_image_format_name(oc_image_format format)
{
    static const char *const names[] = {"ptx", "cubin", "fatbin", "host-elf"};
    return (unsigned)format < 4 ? names[format] : "?";
}

/* ------------------------------------------------------------------ recognising files */

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static int looks_like_ptx(const unsigned char *data, size_t size)
{
    size_t scan = size < 65536 ? size : 65536;
    if (memchr(data, '\0', scan)) return 0; /* binary */
    return oc_ptx_find_directive((const char *)data, scan, ".version") &&
           oc_ptx_find_directive((const char *)data, scan, ".target");
}

static int is_elf64(const unsigned char *d, size_t size)
{
    return size >= 64 && memcmp(d, "\177ELF", 4) == 0 && d[4] == 2 && d[5] == 1;
}

#define NOT_CODE "not PTX, a cubin, a fatbinary or an object with a .nv_fatbin section"

/* Whether a file starting with these n bytes can be code: a fatbinary's magic or an ELF
 * header (told apart once read whole), or PTX (looks_like_ptx reads no further than this). */
static int plausible_start(const unsigned char *d, size_t n)
{
    return (n >= 4 && (rd32(d) == FATBIN_MAGIC || memcmp(d, "\177ELF", 4) == 0)) || looks_like_ptx(d, n);
}

static oc_status read_whole(oc_context *ctx, const char *path, unsigned char **data, size_t *size)
{
    int fd;
    struct stat sb;
    OC_CHECK(ctx, oc_input_open(ctx, path, &fd, &sb));
    size_t len = (size_t)sb.st_size, done = 0;
    /* A file that cannot be code is refused from its start, before the whole is read (a large
     * file would otherwise cost its time and its size in memory to be refused). */
    const size_t head = len < 65536 ? len : 65536;
    unsigned char *start = head > 0 ? malloc(head) : NULL; /* off the stack: callers' threads may be small */
    const ssize_t got = start ? pread(fd, start, head, 0) : -1;
    const int refused = got == (ssize_t)head && !plausible_start(start, head);
    free(start);
    if (refused) {
        close(fd);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: %s", path, NOT_CODE);
    }
    /* One spare byte keeps PTX text NUL-terminated for the driver and the parsers. */
    unsigned char *buf = malloc(len + 1);
    if (!buf) {
        close(fd);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of host memory reading %zu bytes", path, len);
    }
    ssize_t r = 0;
    while (done < len) {
        r = read(fd, buf + done, len - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        done += (size_t)r;
    }
    int err = errno;
    /* A short read of a file whose size stands is a pseudo-file (sysfs says 4096 bytes and
     * holds fewer), not one that changed. */
    struct stat now;
    const int same_size = done < len && fstat(fd, &now) == 0 && now.st_size == sb.st_size;
    close(fd);
    oc_status st = OC_OK;
    if (r < 0) st = oc_fail(ctx, OC_ERR_IO, "%s: read failed: %s", path, strerror(err));
    else if (same_size && !plausible_start(buf, done)) st = oc_fail(ctx, OC_ERR_INPUT, "%s: %s", path, NOT_CODE);
    else if (same_size)
        st = oc_fail(ctx, OC_ERR_INPUT, "%s: reads %zu bytes where its size says %zu: not a file's contents", path,
                     done, len);
    else if (done < len) st = oc_input_changed(ctx, path, (int64_t)done, (int64_t)len);
    if (st != OC_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *data = buf;
    *size = len;
    return OC_OK;
}

/* The host ELF's fatbinary section: 1 for .nv_fatbin, 2 for __nv_relfatbin (an object
 * compiled as relocatable device code, nvcc -rdc=true -c), 0 for none. */
static int host_fatbin(const unsigned char *d, size_t size, const unsigned char **data, size_t *data_size)
{
    if (oc_elf_find_section(d, size, ".nv_fatbin", data, data_size)) return 1;
    return oc_elf_find_section(d, size, "__nv_relfatbin", data, data_size) ? 2 : 0;
}

/* Recognises the format of img->data; anything else fails with OC_ERR_INPUT naming img->path. */
static oc_status recognise(oc_context *ctx, oc_kernel_image *img)
{
    const unsigned char *d = img->data;
    int host = 0;
    if (img->size >= 16 && rd32(d) == FATBIN_MAGIC) {
        img->format = OC_IMAGE_FATBIN;
    } else if (is_elf64(d, img->size) && rd16(d + 18) == EM_CUDA) {
        img->format = OC_IMAGE_CUBIN;
        img->relocatable = rd16(d + 16) == ET_REL;
    } else if (is_elf64(d, img->size) && (host = host_fatbin(d, img->size, NULL, NULL)) != 0) {
        img->format = OC_IMAGE_HOST_ELF;
        img->relocatable = host == 2;
    } else if (looks_like_ptx(d, img->size)) {
        img->format = OC_IMAGE_PTX;
    } else {
        int elf = img->size >= 4 && memcmp(d, "\177ELF", 4) == 0;
        const char *path = img->path;
        oc_kernel_image_release(img);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: %s", path,
                       elf ? "an ELF file without GPU code (no EM_CUDA machine, no .nv_fatbin or __nv_relfatbin "
                             "section)"
                           : NOT_CODE);
    }
    return OC_OK;
}

oc_status oc_kernel_image_read(oc_context *ctx, const char *path, oc_kernel_image *img)
{
    memset(img, 0, sizeof *img);
    OC_CHECK(ctx, read_whole(ctx, path, &img->data, &img->size));
    img->path = path;
    OC_CHECK(ctx, recognise(ctx, img));
    return OC_OK;
}

oc_status oc_kernel_image_copy(oc_context *ctx, const char *name, const void *data, size_t size, oc_kernel_image *img)
{
    memset(img, 0, sizeof *img);
    if (!data || size == 0) return oc_fail(ctx, OC_ERR_INPUT, "%s: no code (0 bytes)", name);
    /* One spare byte keeps PTX text NUL-terminated, as read_whole does. */
    img->data = malloc(size + 1);
    if (!img->data) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of host memory copying %zu bytes", name, size);
    memcpy(img->data, data, size);
    img->data[size] = '\0';
    img->size = size;
    img->path = name;
    img->in_memory = 1;
    OC_CHECK(ctx, recognise(ctx, img));
    return OC_OK;
}

void oc_kernel_image_release(oc_kernel_image *img)
{
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

/* The fatbinary inside img: the file itself, or the start of the host ELF's fatbinary section. */
static void fatbin_region(const oc_kernel_image *img, const unsigned char **data, size_t *size)
{
    *data = img->data;
    *size = img->size;
    if (img->format == OC_IMAGE_HOST_ELF) (void)host_fatbin(img->data, img->size, data, size);
}

void oc_kernel_image_loadable(const oc_kernel_image *img, const void **data, size_t *size)
{
    const unsigned char *d;
    size_t n;
    fatbin_region(img, &d, &n);
    if (img->format == OC_IMAGE_HOST_ELF && n >= 16) n = 16 + (size_t)rd64(d + 8); /* the first fatbinary */
    *data = d;
    *size = img->format == OC_IMAGE_PTX ? n + 1 : n;
}

/* ------------------------------------------------------------------ fatbinary entries */

typedef struct fat_entry {
    int kind; /* FATBIN_KIND_PTX or FATBIN_KIND_ELF */
    int cc;
    uint64_t flags;
    const unsigned char *payload;
    size_t payload_size; /* bytes stored (compressed when flagged) */
    size_t plain_size;   /* bytes once decompressed */
} fat_entry;

typedef struct fat_entries {
    fat_entry items[64];
    int count;
} fat_entries;

/* Walks the fatbinaries back to back in [data, data + size). */
static oc_status fatbin_entries(oc_context *ctx, const char *path, const unsigned char *data, size_t size,
                                fat_entries *out)
{
    size_t at = 0;
    out->count = 0;
    while (at + 16 <= size && rd32(data + at) == FATBIN_MAGIC) {
        size_t header = rd16(data + at + 6);
        uint64_t body = rd64(data + at + 8);
        /* Each size is checked against what remains before it is subtracted from it. */
        if (header < 16 || header > size - at || body > size - at - header)
            return oc_fail(ctx, OC_ERR_INPUT, "%s: truncated fatbinary at offset %zu", path, at);
        const unsigned char *e = data + at + header, *end = e + body;
        while (end - e >= 64) {
            size_t eh = rd32(e + 4);
            uint64_t payload = rd64(e + 8);
            if (eh < 64 || eh > (size_t)(end - e) || payload > (uint64_t)(end - e) - eh)
                return oc_fail(ctx, OC_ERR_INPUT, "%s: malformed fatbinary entry at offset %zu", path,
                               (size_t)(e - data));
            if (out->count < (int)(sizeof out->items / sizeof out->items[0])) {
                fat_entry *f = &out->items[out->count++];
                f->kind = rd16(e);
                f->cc = (int)rd32(e + 28);
                f->flags = rd64(e + 40);
                f->payload = e + eh;
                f->payload_size = (size_t)payload;
                f->plain_size = (size_t)payload;
                if (f->flags & (FATBIN_FLAG_LZ4 | FATBIN_FLAG_ZSTD)) {
                    f->payload_size = (size_t)rd32(e + 16);
                    f->plain_size = (size_t)rd64(e + 56);
                    if (f->payload_size > payload) f->payload_size = (size_t)payload;
                }
            }
            e += eh + payload;
        }
        at += header + body;
        at = (at + 7) & ~(size_t)7; /* fatbinaries in a section are 8-byte aligned */
    }
    if (out->count == 0) return oc_fail(ctx, OC_ERR_INPUT, "%s: the fatbinary holds no code", path);
    return OC_OK;
}

/* LZ4 block format: sequences of (token, literals, 2-byte offset, match); the last has
 * literals only. Returns the bytes written, or -1 on malformed input. */
static long lz4_block_decode(const unsigned char *src, size_t src_size, unsigned char *dst, size_t dst_size)
{
    const unsigned char *s = src, *s_end = src + src_size;
    unsigned char *d = dst, *d_end = dst + dst_size;
    while (s < s_end) {
        unsigned token = *s++;
        size_t literals = token >> 4;
        if (literals == 15) {
            unsigned char b;
            do {
                if (s >= s_end) return -1;
                b = *s++;
                literals += b;
            } while (b == 255);
        }
        if (literals > (size_t)(s_end - s) || literals > (size_t)(d_end - d)) return -1;
        memcpy(d, s, literals);
        d += literals;
        s += literals;
        if (s >= s_end) break; /* the last sequence ends after its literals */
        if (s_end - s < 2) return -1;
        size_t offset = (size_t)s[0] | (size_t)s[1] << 8;
        s += 2;
        if (offset == 0 || offset > (size_t)(d - dst)) return -1;
        size_t match = (token & 15) + 4;
        if ((token & 15) == 15) {
            unsigned char b;
            do {
                if (s >= s_end) return -1;
                b = *s++;
                match += b;
            } while (b == 255);
        }
        if (match > (size_t)(d_end - d)) return -1;
        /* Byte by byte: a match may overlap the bytes it produces (offset < length). */
        for (size_t i = 0; i < match; i++, d++) *d = *(d - offset);
    }
    return (long)(d - dst);
}

/* zstd frames are decoded by the system's libzstd, loaded on first use: outcore does not
 * link it, so a build without it still reads uncompressed and LZ4 fatbinaries. */
typedef size_t (*zstd_decompress_fn)(void *, size_t, const void *, size_t);
typedef unsigned (*zstd_is_error_fn)(size_t);
typedef unsigned long long (*zstd_content_size_fn)(const void *, size_t);

typedef struct zstd_api {
    zstd_decompress_fn decompress;
    zstd_is_error_fn is_error;
    zstd_content_size_fn content_size;
} zstd_api;

/* The library's calls, or NULL when libzstd.so.1 is not installed. */
static const zstd_api *zstd(void)
{
    static zstd_api api;
    static void *lib;
    if (!lib) lib = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return NULL;
    api.decompress = (zstd_decompress_fn)dlsym(lib, "ZSTD_decompress");
    api.is_error = (zstd_is_error_fn)dlsym(lib, "ZSTD_isError");
    api.content_size = (zstd_content_size_fn)dlsym(lib, "ZSTD_getFrameContentSize");
    return api.decompress && api.is_error && api.content_size ? &api : NULL;
}

/* The most bytes an LZ4 block of n bytes can decode to: a byte of a length run adds at most
 * 255 bytes of match, and the block's own tokens and literals are bounded by n. */
#define LZ4_MOST_PER_BYTE 255
/* The most a zstd entry is taken to expand: machine code and PTX compress a few times, never
 * by hundreds. */
#define ZSTD_MOST_PER_BYTE 256

/* Whether e's stated uncompressed size is one its payload can produce: the bytes stored
 * when it is not compressed, at most LZ4_MOST_PER_BYTE times them for LZ4, and the frame's
 * own content size for zstd. The size is the file's word, and it sizes an allocation. */
static oc_status check_plain_size(oc_context *ctx, const char *path, const fat_entry *e, const zstd_api *z)
{
    uint64_t most = e->payload_size;
    if (e->flags & FATBIN_FLAG_ZSTD) {
        unsigned long long frame = z->content_size(e->payload, e->payload_size);
        /* ZSTD_CONTENTSIZE_UNKNOWN and _ERROR are the two largest values. A frame may state any
         * size (a megabyte of zeros compresses to a few bytes): past ZSTD_MOST_PER_BYTE times
         * its stored bytes, more than any GPU code compresses, it is a bomb, not code. */
        most = frame >= ~0ULL - 1 ? 0 : (uint64_t)frame;
        if (e->payload_size <= (UINT64_MAX - 4096) / ZSTD_MOST_PER_BYTE &&
            most > e->payload_size * ZSTD_MOST_PER_BYTE + 4096)
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: the sm_%d entry's zstd frame states %llu bytes from %zu stored, more than %d times "
                           "what GPU code compresses to: not decompressed",
                           path, e->cc, (unsigned long long)most, e->payload_size, ZSTD_MOST_PER_BYTE);
    } else if (e->flags & FATBIN_FLAG_LZ4) {
        most = e->payload_size > (UINT64_MAX - 64) / LZ4_MOST_PER_BYTE ? UINT64_MAX
                                                                       : e->payload_size * LZ4_MOST_PER_BYTE + 64;
    }
    if (e->plain_size <= most && e->plain_size < PTRDIFF_MAX &&
        (!(e->flags & FATBIN_FLAG_ZSTD) || e->plain_size == most))
        return OC_OK;
    return oc_fail(ctx, OC_ERR_INPUT,
                   "%s: the sm_%d entry states an uncompressed size of %zu bytes, which its %zu stored bytes cannot "
                   "hold%s",
                   path, e->cc, e->plain_size, e->payload_size,
                   e->flags & FATBIN_FLAG_ZSTD ? " (its zstd frame says otherwise)" : "");
}

/* The entry's code, decompressed into a new buffer (NUL-terminated for PTX). */
static oc_status entry_code(oc_context *ctx, const char *path, const fat_entry *e, unsigned char **code, size_t *size)
{
    const zstd_api *z = e->flags & FATBIN_FLAG_ZSTD ? zstd() : NULL;
    if ((e->flags & FATBIN_FLAG_ZSTD) && !z)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED,
                       "%s: the sm_%d entry is zstd-compressed and libzstd.so.1 is not installed", path, e->cc);
    OC_CHECK(ctx, check_plain_size(ctx, path, e, z));
    unsigned char *buf = malloc(e->plain_size + 1);
    if (!buf)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of host memory for a %zu-byte fatbinary entry", path,
                       e->plain_size);
    long n;
    if (z) {
        size_t got = z->decompress(buf, e->plain_size, e->payload, e->payload_size);
        n = z->is_error(got) ? -1 : (long)got;
    } else if (e->flags & FATBIN_FLAG_LZ4) {
        n = lz4_block_decode(e->payload, e->payload_size, buf, e->plain_size);
    } else {
        n = (long)e->plain_size, memcpy(buf, e->payload, e->plain_size);
    }
    if (n < 0 || (size_t)n != e->plain_size) {
        free(buf);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: the sm_%d entry does not decompress", path, e->cc);
    }
    buf[n] = '\0';
    /* PTX entries may be padded with NULs up to the payload size. */
    if (e->kind == FATBIN_KIND_PTX) n = (long)strlen((char *)buf);
    *code = buf;
    *size = (size_t)n;
    return OC_OK;
}

/* Which entry answers for target (0 = the best the file offers). */
static const fat_entry *choose_entry(const fat_entries *all, int target)
{
    const fat_entry *exact = NULL, *ptx = NULL, *compatible = NULL, *best = NULL;
    for (int i = 0; i < all->count; i++) {
        const fat_entry *e = &all->items[i];
        if (e->kind == FATBIN_KIND_ELF) {
            if (e->cc == target) exact = e;
            /* A cubin runs on a later minor of its major (sm_80 code on sm_86). */
            if (target && e->cc / 10 == target / 10 && e->cc < target && (!compatible || e->cc > compatible->cc))
                compatible = e;
            if (!best || e->cc > best->cc || best->kind != FATBIN_KIND_ELF) best = e;
        } else if (e->kind == FATBIN_KIND_PTX) {
            if ((!target || e->cc <= target) && (!ptx || e->cc > ptx->cc)) ptx = e;
            if (!best) best = e;
        }
    }
    if (!target) return best;
    return exact ? exact : ptx ? ptx : compatible;
}

/* Writes PTX to a temporary file for ptxas and removes it afterwards. */
static oc_status ptxas_on_copy(oc_context *ctx, const char *display, const unsigned char *ptx, size_t size, int cc,
                               char suffix, const oc_inspect_options *jit, oc_kernel_list *out)
{
    const char *dir = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/outcore-inspect-XXXXXX.ptx", dir && *dir ? dir : "/tmp");
    int fd = mkstemps(tmp, 4);
    if (fd < 0)
        return oc_fail(ctx, OC_ERR_IO, "%s: cannot create a temporary file for ptxas in %s: %s", display,
                       dir && *dir ? dir : "/tmp", strerror(errno));
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, ptx + done, size - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    close(fd);
    oc_status st = done == size ? oc_ptxas_resources(ctx, tmp, display, cc, suffix, jit, out)
                                : oc_fail(ctx, OC_ERR_IO, "%s: cannot write the temporary file %s", display, tmp);
    unlink(tmp);
    return st;
}

/* The kernels of PTX text compiled by ptxas for cc, with the directives ptxas does not
 * report. file: the PTX's own file, handed to ptxas so that its messages name it; NULL when
 * the text exists only in memory. */
static oc_status ptx_resources(oc_context *ctx, const char *display, const char *file, const unsigned char *ptx,
                               size_t size, int cc, const oc_inspect_options *jit, oc_kernel_list *out)
{
    char suffix;
    int ptx_cc = oc_ptx_target_cc((const char *)ptx, size, &suffix);
    /* sm_90a PTX compiles only for sm_90a: the feature-set letter goes to ptxas too. */
    if (ptx_cc != cc) suffix = '\0';
    int first = out->count;
    if (file) OC_CHECK(ctx, oc_ptxas_resources(ctx, file, display, cc, suffix, jit, out));
    else OC_CHECK(ctx, ptxas_on_copy(ctx, display, ptx, size, cc, suffix, jit, out));
    oc_ptx_entry_directives((const char *)ptx, size, out, first);
    out->code_cc = cc;
    return OC_OK;
}

static oc_status fatbin_resources(oc_context *ctx, const oc_kernel_image *img, int target,
                                  const oc_inspect_options *jit, oc_kernel_list *out)
{
    const unsigned char *region;
    size_t region_size;
    fatbin_region(img, &region, &region_size);
    fat_entries *all = malloc(sizeof *all);
    if (!all) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory");
    oc_status st = fatbin_entries(ctx, img->path, region, region_size, all);
    if (st != OC_OK) {
        free(all);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    const fat_entry *e = choose_entry(all, target);
    if (!e) {
        char have[256] = "";
        for (int i = 0; i < all->count; i++)
            snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s_%d", i ? ", " : "",
                     all->items[i].kind == FATBIN_KIND_PTX ? "compute" : "sm", all->items[i].cc);
        free(all);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: no code for sm_%d (the file holds %s)", img->path, target, have);
    }
    st = OC_OK;
    /* An executable carries one fatbinary per translation unit (and the CUDA runtime's own):
     * every entry of the chosen kind and SM contributes its kernels. */
    fat_entry chosen = *e;
    for (int i = 0; i < all->count && st == OC_OK; i++) {
        const fat_entry *f = &all->items[i];
        if (f->kind != chosen.kind || f->cc != chosen.cc) continue;
        unsigned char *code = NULL;
        size_t code_size = 0;
        st = entry_code(ctx, img->path, f, &code, &code_size);
        if (st != OC_OK) break;
        char display[600];
        if (f->kind == FATBIN_KIND_PTX) {
            int cc = target ? target : f->cc;
            snprintf(display, sizeof display, "%s (compute_%d PTX inside)", img->path, f->cc);
            /* The entry's architecture is the file's word, as for a PTX file's .target. */
            if (!oc_gpu_arch_find(cc))
                st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                             "%s: PTX for compute_%d; pass --arch with a known architecture", display, cc);
            else st = ptx_resources(ctx, display, NULL, code, code_size, cc, jit, out);
        } else {
            snprintf(display, sizeof display, "%s (sm_%d cubin inside)", img->path, f->cc);
            st = oc_cubin_resources(ctx, display, code, code_size, out);
        }
        free(code);
    }
    free(all);
    return st == OC_OK ? OC_OK : oc_trace_at(ctx, st, __FILE__, __LINE__);
}

oc_status oc_kernel_image_resources(oc_context *ctx, const oc_kernel_image *img, int target_cc,
                                    const oc_inspect_options *jit, oc_kernel_list *out)
{
    switch (img->format) {
    case OC_IMAGE_PTX: {
        int cc = target_cc ? target_cc : oc_ptx_target_cc((const char *)img->data, img->size, NULL);
        if (!oc_gpu_arch_find(cc))
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: PTX for sm_%d; pass --arch with a known architecture",
                           img->path, cc);
        OC_CHECK(ctx,
                 ptx_resources(ctx, img->path, img->in_memory ? NULL : img->path, img->data, img->size, cc, jit, out));
        return OC_OK;
    }
    case OC_IMAGE_CUBIN:
        OC_CHECK(ctx, oc_cubin_resources(ctx, img->path, img->data, img->size, out));
        return OC_OK;
    case OC_IMAGE_FATBIN:
    case OC_IMAGE_HOST_ELF:
        OC_CHECK(ctx, fatbin_resources(ctx, img, target_cc, jit, out));
        return OC_OK;
    }
    return oc_fail(ctx, OC_ERR_INTERNAL, "%s: unknown image format %d", img->path, (int)img->format);
}

int oc_kernel_image_is_jit(const oc_kernel_image *img, int target_cc)
{
    if (img->format == OC_IMAGE_PTX) return 1;
    if (img->format == OC_IMAGE_CUBIN) return 0;
    const unsigned char *region;
    size_t region_size;
    fatbin_region(img, &region, &region_size);
    fat_entries *all = malloc(sizeof *all);
    int jit = 0;
    if (all && fatbin_entries(NULL, img->path, region, region_size, all) == OC_OK) {
        const fat_entry *e = choose_entry(all, target_cc);
        jit = e && e->kind == FATBIN_KIND_PTX;
    }
    free(all);
    return jit;
}

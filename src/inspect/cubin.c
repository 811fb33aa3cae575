/*
 * cubin.c - kernel resources read from a cubin's ELF, as the driver itself reads them.
 *
 * Where each figure lives (what `cuobjdump -res-usage` prints):
 *   kernels          symbols of type FUNC with STO_CUDA_ENTRY (0x10) in st_other
 *   registers        .nv.info attribute EIATTR_REGCOUNT (0x2f): {symbol index, count};
 *                    older cubins also keep it in bits 24..31 of .text.<kernel>'s sh_info
 *   stack frame      .nv.info EIATTR_FRAME_SIZE (0x11): {symbol index, bytes per thread}
 *   static shared    the size of the NOBITS section .nv.shared.<kernel>
 *   parameters etc.  the size of .nv.constant0.<kernel> (ptxas' "cmem[0]")
 *   launch bounds    .nv.info.<kernel> EIATTR_MAX_THREADS (0x05): {x, y, z}, or
 *                    EIATTR_REQNTID (0x10) for __cluster_dims__/reqntid kernels
 *   register cap     .nv.info.<kernel> EIATTR_MAXREG_COUNT (0x1b): {u16}, the cap it was
 *                    compiled under (__maxnreg__, -maxrregcount or launch bounds; 255 = none)
 * An .nv.info section is a list of {u8 format, u8 attribute, value}: format 1 has no value,
 * 2 one byte, 3 a u16, 4 a u16 length and that many bytes.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "inspect/elf_read.h"
#include "inspect/cubin.h"

#define EM_CUDA 190
#define SHT_SYMTAB 2
#define SHT_NOBITS 8
#define STT_FUNC 2
#define STO_CUDA_ENTRY 0x10
#define ELFOSABI_CUDA_V2 0x41

#define EIFMT_NVAL 1
#define EIFMT_BVAL 2
#define EIFMT_HVAL 3
#define EIFMT_SVAL 4
#define EIATTR_MAX_THREADS 0x05
#define EIATTR_REQNTID 0x10
#define EIATTR_MAXREG_COUNT 0x1b
#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_REGCOUNT 0x2f

static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

int oc_cubin_cc(const unsigned char *data, size_t size)
{
    if (size < 64 || memcmp(data, "\177ELF", 4) != 0 || (data[18] | data[19] << 8) != EM_CUDA) return 0;
    uint32_t flags = rd32(data + 0x30);
    /* The second ELF ABI of CUDA (OSABI 0x41, CUDA 12.8 and later) moved the SM to bits 8..15. */
    return data[7] == ELFOSABI_CUDA_V2 ? (int)(flags >> 8 & 0xff) : (int)(flags & 0xff);
}

/* Calls visit(attribute, value, length) for each attribute of an .nv.info section. */
typedef void (*attr_visit)(void *user, int attr, const unsigned char *value, size_t len);

static void walk_nv_info(const oc_elf_section *s, attr_visit visit, void *user)
{
    const unsigned char *p = s->data, *end = s->data + s->size;
    while (end - p >= 4) {
        int format = p[0], attr = p[1];
        if (format == EIFMT_SVAL) {
            size_t len = (size_t)(p[2] | p[3] << 8);
            if (len > (size_t)(end - p - 4)) return;
            visit(user, attr, p + 4, len);
            p += 4 + len;
        } else if (format == EIFMT_HVAL || format == EIFMT_BVAL || format == EIFMT_NVAL) {
            visit(user, attr, p + 2, format == EIFMT_HVAL ? 2 : format == EIFMT_BVAL ? 1 : 0);
            p += 4;
        } else {
            return; /* an unknown format: its length is unknown, stop rather than misread */
        }
    }
}

typedef struct global_attrs {
    oc_kernel_list *list;
    const int *symbol_kernel; /* symbol index -> kernel index or -1 */
    unsigned symbols;
} global_attrs;

static void visit_global(void *user, int attr, const unsigned char *v, size_t len)
{
    global_attrs *g = user;
    if (len != 8 || (attr != EIATTR_REGCOUNT && attr != EIATTR_FRAME_SIZE)) return;
    uint32_t sym = rd32(v), value = rd32(v + 4);
    if (sym >= g->symbols || g->symbol_kernel[sym] < 0) return;
    oc_kernel_entry *e = &g->list->items[g->symbol_kernel[sym]];
    if (attr == EIATTR_REGCOUNT) e->res.regs_per_thread = (int)value;
    else e->res.local_bytes = value;
}

static void visit_kernel(void *user, int attr, const unsigned char *v, size_t len)
{
    oc_kernel_entry *e = user;
    if (attr == EIATTR_MAXREG_COUNT && len == 2) e->built_reg_cap = v[0] | v[1] << 8;
    if ((attr == EIATTR_MAX_THREADS || attr == EIATTR_REQNTID) && len == 12) {
        /* The product in 64 bits, so that x * y * z cannot wrap to a small, plausible bound. */
        uint64_t product = (uint64_t)rd32(v) * rd32(v + 4);
        if (product <= INT_MAX) product *= rd32(v + 8);
        if (product == 0 || product > 1024) return;
        int threads = (int)product;
        if (attr == EIATTR_MAX_THREADS) e->maxntid = threads;
        else e->reqntid = e->res.required_threads = threads; /* no other size launches */
        /* A block larger than either does not launch. */
        if (e->launch_bounds == 0 || threads < e->launch_bounds)
            e->launch_bounds = e->res.max_threads_per_block = threads;
    }
}

/* The kernel of this cubin (entries from first on) named name: a kernel of the same name in
 * an earlier cubin of the list (the same template in two translation units, or sm_90 beside
 * sm_90a) is another copy, whose sections these are not. */
static oc_kernel_entry *find_new(oc_kernel_list *list, int first, const char *name)
{
    for (int i = first; i < list->count; i++)
        if (strcmp(list->items[i].name, name) == 0) return &list->items[i];
    return NULL;
}

/* The release of the toolkit that made the cubin, times ten (130: CUDA 13.0), from its
 * .note.nv.cuinfo note (namesz, descsz, type, the name "NVIDIA Corp" padded to 4 bytes, then
 * a u16 note version, a u16 of the code's sm and a u32 of the release); 0 without one. */
static uint32_t toolkit_release(const unsigned char *data, size_t size)
{
    const unsigned char *note;
    size_t n;
    if (!oc_elf_find_section(data, size, ".note.nv.cuinfo", &note, &n) || n < 12) return 0;
    const uint32_t namesz = rd32(note), descsz = rd32(note + 4);
    const size_t desc = 12 + ((size_t)namesz + 3) / 4 * 4;
    return descsz >= 8 && desc + 8 <= n ? rd32(note + desc + 4) : 0;
}

/* "<prefix><kernel>" section name test. */
static const char *suffix_after(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(name, prefix, n) == 0 ? name + n : NULL;
}

oc_status oc_cubin_resources(oc_context *ctx, const char *display, const unsigned char *data, size_t size,
                             oc_kernel_list *out)
{
    oc_elf elf;
    if (oc_elf_open(&elf, data, size) != 0 || oc_cubin_cc(data, size) == 0)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: not a valid 64-bit cubin (bad ELF header or section table)", display);
    out->code_cc = oc_cubin_cc(data, size);
    snprintf(out->source, sizeof out->source, "cubin attributes");

    /* The symbol table names the kernels. */
    oc_elf_section symtab = {0};
    unsigned i;
    for (i = 1; i < elf.shnum; i++)
        if (oc_elf_section_at(&elf, i, &symtab) == 0 && symtab.type == SHT_SYMTAB && symtab.data) break;
    if (i == elf.shnum) return oc_fail(ctx, OC_ERR_INPUT, "%s: the cubin has no symbol table", display);
    unsigned symbols = (unsigned)(symtab.size / 24);
    int *symbol_kernel = malloc((symbols ? symbols : 1) * sizeof *symbol_kernel);
    if (!symbol_kernel) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of host memory", display);
    int first_new = out->count;
    oc_status st = OC_OK;
    for (unsigned k = 0; k < symbols; k++) {
        const unsigned char *sym = symtab.data + (size_t)k * 24;
        symbol_kernel[k] = -1;
        if ((sym[4] & 0xf) != STT_FUNC || !(sym[5] & STO_CUDA_ENTRY)) continue;
        const char *name = oc_elf_string(&elf, symtab.link, rd32(sym));
        if (!name || !*name) continue;
        oc_kernel_entry *e;
        OC_CHECK_GOTO(ctx, st, oc_kernel_list_add(ctx, out, name, strlen(name), &e), cleanup);
        symbol_kernel[k] = out->count - 1;
    }

    /* A cubin of sm_90 on made by CUDA 12.8 or later counts the block's reserved shared memory
     * inside each kernel's .nv.shared.<kernel> (a NOBITS section; relocatable code's, of a
     * CUDA type, leaves it to the linker), which the driver leaves out of the kernel's static
     * figure (it adds the reserve itself, as the launch arithmetic here does). The release is
     * in .note.nv.cuinfo; a .nv.shared.reserved.* section says so too, but debug (-G) builds
     * and cubins nvlink linked from relocatable code have none. */
    int reserved_inside = out->code_cc >= 90 && toolkit_release(data, size) >= 128;
    for (i = 1; i < elf.shnum; i++) {
        oc_elf_section s;
        if (oc_elf_section_at(&elf, i, &s) == 0 && suffix_after(s.name, ".nv.shared.reserved.")) reserved_inside = 1;
    }
    const oc_gpu_arch *arch = oc_gpu_arch_find(out->code_cc);
    const size_t reserve = reserved_inside && arch ? arch->smem_reserved_per_block : 0;
    for (i = 1; i < elf.shnum; i++) {
        oc_elf_section s;
        if (oc_elf_section_at(&elf, i, &s) != 0) continue;
        const char *kernel;
        oc_kernel_entry *e;
        if (strcmp(s.name, ".nv.info") == 0 && s.data) {
            global_attrs g = {out, symbol_kernel, symbols};
            walk_nv_info(&s, visit_global, &g);
        } else if ((kernel = suffix_after(s.name, ".nv.info.")) && s.data && (e = find_new(out, first_new, kernel))) {
            walk_nv_info(&s, visit_kernel, e);
        } else if ((kernel = suffix_after(s.name, ".nv.shared.")) && (e = find_new(out, first_new, kernel))) {
            const size_t inside = s.type == SHT_NOBITS ? reserve : 0;
            e->res.static_smem = s.size > inside ? s.size - inside : 0;
        } else if ((kernel = suffix_after(s.name, ".nv.constant0.")) && (e = find_new(out, first_new, kernel))) {
            e->const_bytes = (int64_t)s.size;
        } else if ((kernel = suffix_after(s.name, ".text.")) && (e = find_new(out, first_new, kernel)) &&
                   e->res.regs_per_thread == 0) {
            e->res.regs_per_thread = (int)(s.info >> 24); /* older cubins; EIATTR_REGCOUNT wins */
        }
    }
    /* A count past what any GPU gives a thread is a damaged file, and the launch arithmetic
     * (registers x 32 x warps) assumes counts the hardware can have. */
    int max_regs = 0;
    size_t max_smem = 0;
    for (int a = 0; oc_gpu_arch_at(a); a++) {
        if (oc_gpu_arch_at(a)->max_regs_per_thread > max_regs) max_regs = oc_gpu_arch_at(a)->max_regs_per_thread;
        if (oc_gpu_arch_at(a)->smem_per_block_optin > max_smem) max_smem = oc_gpu_arch_at(a)->smem_per_block_optin;
    }
    for (int k = first_new; k < out->count && st == OC_OK; k++) {
        int regs = out->items[k].res.regs_per_thread;
        if (regs <= 0)
            st = oc_fail(ctx, OC_ERR_INPUT, "%s: kernel %s has no register count in the cubin", display,
                         out->items[k].name);
        else if (regs > max_regs)
            st = oc_fail(ctx, OC_ERR_INPUT,
                         "%s: kernel %s claims %d registers per thread; no GPU gives a thread more than %d", display,
                         out->items[k].name, regs, max_regs);
        else if (out->items[k].res.static_smem > max_smem)
            st = oc_fail(ctx, OC_ERR_INPUT,
                         "%s: kernel %s claims %zu bytes of static shared memory; no GPU gives a block more than %zu",
                         display, out->items[k].name, out->items[k].res.static_smem, max_smem);
    }
cleanup:
    free(symbol_kernel);
    return st;
}

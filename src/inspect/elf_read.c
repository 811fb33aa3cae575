/* elf_read.c - bounds-checked ELF64 section access (see elf_read.h). */
#include "inspect/elf_read.h"

#include <string.h>

#define SHT_NOBITS 8

static uint64_t rd(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

int oc_elf_open(oc_elf *elf, const unsigned char *data, size_t size)
{
    memset(elf, 0, sizeof *elf);
    if (size < 64 || memcmp(data, "\177ELF", 4) != 0 || data[4] != 2 || data[5] != 1) return -1;
    elf->base = data;
    elf->size = size;
    elf->shoff = (size_t)rd(data + 0x28, 8);
    elf->shentsize = (unsigned)rd(data + 0x3a, 2);
    elf->shnum = (unsigned)rd(data + 0x3c, 2);
    elf->shstrndx = (unsigned)rd(data + 0x3e, 2);
    if (elf->shentsize < 64 || elf->shoff > size || (size - elf->shoff) / elf->shentsize < elf->shnum) return -1;
    if (elf->shstrndx >= elf->shnum) return -1;
    return 0;
}

int oc_elf_section_at(const oc_elf *elf, unsigned i, oc_elf_section *out)
{
    if (i >= elf->shnum) return -1;
    const unsigned char *h = elf->base + elf->shoff + (size_t)i * elf->shentsize;
    memset(out, 0, sizeof *out);
    out->type = (uint32_t)rd(h + 4, 4);
    out->flags = rd(h + 8, 8);
    uint64_t offset = rd(h + 24, 8), size = rd(h + 32, 8);
    out->link = (uint32_t)rd(h + 40, 4);
    out->info = (uint32_t)rd(h + 44, 4);
    out->size = (size_t)size;
    if (out->type != SHT_NOBITS && offset <= elf->size && size <= elf->size - offset) out->data = elf->base + offset;
    const char *name = oc_elf_string(elf, elf->shstrndx, (uint32_t)rd(h, 4));
    out->name = name ? name : "";
    return 0;
}

const char *oc_elf_string(const oc_elf *elf, unsigned strtab, uint32_t offset)
{
    if (strtab >= elf->shnum) return NULL;
    const unsigned char *h = elf->base + elf->shoff + (size_t)strtab * elf->shentsize;
    uint64_t start = rd(h + 24, 8), size = rd(h + 32, 8);
    if (start > elf->size || size > elf->size - start || offset >= size) return NULL;
    const char *s = (const char *)elf->base + start + offset;
    /* The string must end inside its table. */
    return memchr(s, '\0', (size_t)(size - offset)) ? s : NULL;
}

int oc_elf_find_section(const unsigned char *data, size_t size, const char *name, const unsigned char **sdata,
                        size_t *ssize)
{
    oc_elf elf;
    if (oc_elf_open(&elf, data, size) != 0) return 0;
    for (unsigned i = 1; i < elf.shnum; i++) {
        oc_elf_section s;
        if (oc_elf_section_at(&elf, i, &s) == 0 && strcmp(s.name, name) == 0 && s.data) {
            if (sdata) *sdata = s.data;
            if (ssize) *ssize = s.size;
            return 1;
        }
    }
    return 0;
}

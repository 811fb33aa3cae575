/*
 * elf_read.h - bounds-checked reading of little-endian ELF64 files held in memory (cubins
 * and host objects). Every accessor checks offsets against the buffer, so a truncated or
 * hostile file yields "not found", never a read past the end.
 */
#ifndef OC_INSPECT_ELF_READ_H
#define OC_INSPECT_ELF_READ_H

#include <stddef.h>
#include <stdint.h>

typedef struct oc_elf_section {
    const char *name; /* points into the file ("" when unnamed) */
    uint32_t type;
    uint64_t flags;
    uint32_t link;
    uint32_t info;
    /* NULL for SHT_NOBITS (.nv.shared.*) and for any section whose bytes lie outside the
     * file (relocatable code's shared-memory sections, of a CUDA type, have none) */
    const unsigned char *data;
    size_t size; /* sh_size, also for NOBITS */
} oc_elf_section;

typedef struct oc_elf {
    const unsigned char *base;
    size_t size;
    size_t shoff;
    unsigned shnum, shentsize, shstrndx;
} oc_elf;

/* Validates the ELF64 header and the section table; 0 on success. */
int oc_elf_open(oc_elf *elf, const unsigned char *data, size_t size);
/* Section i (0 <= i < shnum); 0 on success. */
int oc_elf_section_at(const oc_elf *elf, unsigned i, oc_elf_section *out);
/* NUL-terminated string at offset in the string-table section strtab, NULL when out of range. */
const char *oc_elf_string(const oc_elf *elf, unsigned strtab, uint32_t offset);
/* Finds a section by name; 1 when found (data/size may be NULL). */
int oc_elf_find_section(const unsigned char *data, size_t size, const char *name, const unsigned char **sdata,
                        size_t *ssize);

#endif

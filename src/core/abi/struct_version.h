/*
 * struct_version.h - the size of an earlier version of a public struct (docs/abi.md), as a
 * caller built against that version passes it in struct_size.
 *
 * A version that ended before field `next` had the size its compiler gave it: the offset of
 * `next` rounded up to the struct's alignment, the padding after its last field included
 * (a version ending in an int after 8-byte fields is 4 bytes longer than that offset). Every
 * public struct starts with its size_t struct_size, so each version has the current one's
 * alignment.
 */
#ifndef OC_CORE_ABI_STRUCT_VERSION_H
#define OC_CORE_ABI_STRUCT_VERSION_H

#include <stddef.h>

#define OC_STRUCT_VERSION_SIZE(type, next) \
    ((offsetof(type, next) + _Alignof(type) - 1) / _Alignof(type) * _Alignof(type))

#endif

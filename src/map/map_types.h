/*
 * map_types.h - the element types of `outcore map` and numpy's rules over them: promotion
 * (NEP 50: Python scalars are "weak"), casting (can_cast 'same_kind') and the result types
 * of numpy's ufunc loops for each operation.
 *
 * Types are numbered as the public oc_map_dtype (outcore.h), so one number crosses the API.
 */
#ifndef OC_MAP_MAP_TYPES_H
#define OC_MAP_MAP_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include "outcore.h"

#define OC_MT_COUNT 11
/* Short aliases of the public codes, used by the evaluator's tables. */
enum {
    MT_BOOL = OC_MAP_BOOL,
    MT_I8 = OC_MAP_INT8,
    MT_I16 = OC_MAP_INT16,
    MT_I32 = OC_MAP_INT32,
    MT_I64 = OC_MAP_INT64,
    MT_U8 = OC_MAP_UINT8,
    MT_U16 = OC_MAP_UINT16,
    MT_U32 = OC_MAP_UINT32,
    MT_U64 = OC_MAP_UINT64,
    MT_F32 = OC_MAP_FLOAT32,
    MT_F64 = OC_MAP_FLOAT64
};

/* Kinds in numpy's order: bool < signed/unsigned integer < float. */
typedef enum oc_mt_kind { MT_KIND_BOOL, MT_KIND_INT, MT_KIND_UINT, MT_KIND_FLOAT } oc_mt_kind;

size_t oc_mt_size(int t);
oc_mt_kind oc_mt_kind_of(int t);
static inline int oc_mt_is_float(int t) { return t == MT_F32 || t == MT_F64; }
static inline int oc_mt_is_integer(int t) { return t != MT_BOOL && !oc_mt_is_float(t); }
/* numpy's name ("float64"); "?" for a bad code. */
const char *oc_mt_name(int t);
/* Parses a numpy dtype name ("float32", "f4", "int", "bool", ...); -1 when unknown. */
int oc_mt_parse(const char *name);
/* The .npy descr of t in this host's byte order ("<f8", "|b1"). */
const char *oc_mt_descr(int t);
/* The C type that holds t in the generated CUDA kernels ("float", "unsigned char" for bool). */
const char *oc_mt_ctype(int t);
/* The type of a .npy descr ('<i4', '|u1', '?', 'f8'...) when it is native or byte-free;
 * -1 otherwise (another byte order, or a type map does not read). */
int oc_mt_from_descr(const char *descr);

/* numpy.result_type(a, b) of two strong (array) types. */
int oc_mt_promote(int a, int b);
/* numpy.can_cast(from, to, 'same_kind'). */
int oc_mt_can_cast_same_kind(int from, int to);
/* Smallest and largest values of an integer type, for the bounds check of weak Python ints
 * (NEP 50: `uint8_array + 300` is an error). */
int oc_mt_int_fits(int t, int64_t v);

#endif

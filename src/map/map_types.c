/* map_types.c - numpy's type rules over map's eleven types (map_types.h). */
#include "map/map_types.h"

#include <string.h>

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE "<"
#else
#define NATIVE ">"
#endif

static const struct {
    const char *name;
    const char *descr;
    const char *code; /* numpy's one-letter kind + size, as in a descr without byte order */
    size_t size;
    oc_mt_kind kind;
    const char *ctype; /* the CUDA C type of the generated kernels (oc_u64: map_codegen.c's) */
} mt_info[] = {
    [MT_BOOL] = {"bool", "|b1", "b1", 1, MT_KIND_BOOL, "unsigned char"},
    [MT_I8] = {"int8", "|i1", "i1", 1, MT_KIND_INT, "signed char"},
    [MT_I16] = {"int16", NATIVE "i2", "i2", 2, MT_KIND_INT, "short"},
    [MT_I32] = {"int32", NATIVE "i4", "i4", 4, MT_KIND_INT, "int"},
    [MT_I64] = {"int64", NATIVE "i8", "i8", 8, MT_KIND_INT, "long long"},
    [MT_U8] = {"uint8", "|u1", "u1", 1, MT_KIND_UINT, "unsigned char"},
    [MT_U16] = {"uint16", NATIVE "u2", "u2", 2, MT_KIND_UINT, "unsigned short"},
    [MT_U32] = {"uint32", NATIVE "u4", "u4", 4, MT_KIND_UINT, "unsigned int"},
    [MT_U64] = {"uint64", NATIVE "u8", "u8", 8, MT_KIND_UINT, "oc_u64"},
    [MT_F32] = {"float32", NATIVE "f4", "f4", 4, MT_KIND_FLOAT, "float"},
    [MT_F64] = {"float64", NATIVE "f8", "f8", 8, MT_KIND_FLOAT, "double"},
};
/* A type added to oc_map_dtype and OC_MT_COUNT without its row here stops the build. */
_Static_assert(sizeof mt_info / sizeof mt_info[0] == OC_MT_COUNT, "mt_info[] needs one row per map type");

size_t oc_mt_size(int t) { return t >= 0 && t < OC_MT_COUNT ? mt_info[t].size : 0; }
oc_mt_kind oc_mt_kind_of(int t) { return mt_info[t].kind; }
const char *oc_mt_name(int t) { return t >= 0 && t < OC_MT_COUNT ? mt_info[t].name : "?"; }
const char *oc_mt_descr(int t) { return mt_info[t].descr; }
const char *oc_mt_ctype(int t) { return mt_info[t].ctype; }

int oc_mt_parse(const char *name)
{
    static const struct {
        const char *alias;
        int t;
    } aliases[] = {
        {"?", MT_BOOL}, {"bool_", MT_BOOL}, {"int", MT_I64}, {"float", MT_F64}, {"double", MT_F64}, {"single", MT_F32},
        {"b", MT_I8},   {"B", MT_U8},       {"h", MT_I16},   {"H", MT_U16},     {"i", MT_I32},      {"I", MT_U32},
        {"l", MT_I64},  {"L", MT_U64},      {"q", MT_I64},   {"Q", MT_U64},     {"f", MT_F32},      {"d", MT_F64},
    };
    if (!name) return -1;
    for (int t = 0; t < OC_MT_COUNT; t++)
        if (strcmp(name, mt_info[t].name) == 0 || strcmp(name, mt_info[t].code) == 0) return t;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) return aliases[i].t;
    return -1;
}

int oc_mt_from_descr(const char *descr)
{
    const char *d = descr;
    /* One-byte types carry no byte order; wider ones must be this host's. */
    if (*d == '|' || *d == '=' || *d == NATIVE[0]) d++;
    else if (*d == '<' || *d == '>') {
        int t = oc_mt_parse(d + 1);
        return t >= 0 && oc_mt_size(t) == 1 ? t : -1;
    }
    return oc_mt_parse(d);
}

/* The signed type twice the width of an unsigned one (numpy's rule for int op uint). */
static int signed_above(int u)
{
    switch (u) {
    case MT_U8:
        return MT_I16;
    case MT_U16:
        return MT_I32;
    case MT_U32:
        return MT_I64;
    default:
        return MT_F64; /* uint64 with any signed type: float64, as numpy */
    }
}

int oc_mt_promote(int a, int b)
{
    if (a == b) return a;
    if (a == MT_BOOL) return b;
    if (b == MT_BOOL) return a;
    oc_mt_kind ka = mt_info[a].kind, kb = mt_info[b].kind;
    if (ka == MT_KIND_FLOAT || kb == MT_KIND_FLOAT) {
        int f = ka == MT_KIND_FLOAT ? a : b, o = ka == MT_KIND_FLOAT ? b : a;
        if (f == MT_F64 || o == MT_F64) return MT_F64;
        /* float32 holds every int8/uint8/int16/uint16 exactly, not wider integers. */
        return mt_info[o].kind == MT_KIND_FLOAT || mt_info[o].size <= 2 ? MT_F32 : MT_F64;
    }
    if (ka == kb) return mt_info[a].size >= mt_info[b].size ? a : b;
    int s = ka == MT_KIND_INT ? a : b, u = ka == MT_KIND_INT ? b : a;
    if (mt_info[u].size < mt_info[s].size) return s;
    int su = signed_above(u);
    return su == MT_F64 ? MT_F64 : oc_mt_promote(s, su);
}

int oc_mt_can_cast_same_kind(int from, int to)
{
    /* numpy's kind order for 'same_kind': b < u < i < f; a cast is allowed into the same
     * or a later kind at any size (float64 -> float32 is same kind, int8 -> uint8 is not). */
    static const int rank[] = {[MT_KIND_BOOL] = 0, [MT_KIND_UINT] = 1, [MT_KIND_INT] = 2, [MT_KIND_FLOAT] = 3};
    return rank[mt_info[from].kind] <= rank[mt_info[to].kind];
}

int oc_mt_int_fits(int t, int64_t v)
{
    switch (t) {
    case MT_I8:
        return v >= INT8_MIN && v <= INT8_MAX;
    case MT_I16:
        return v >= INT16_MIN && v <= INT16_MAX;
    case MT_I32:
        return v >= INT32_MIN && v <= INT32_MAX;
    case MT_I64:
        return 1;
    case MT_U8:
        return v >= 0 && v <= UINT8_MAX;
    case MT_U16:
        return v >= 0 && v <= UINT16_MAX;
    case MT_U32:
        return v >= 0 && v <= UINT32_MAX;
    case MT_U64:
        return v >= 0;
    default:
        return 1;
    }
}

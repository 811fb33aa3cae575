/*
 * map_cpu_ops.c - the map interpreter's loops of the instruction set in use (the loops
 * themselves: map_cpu_ops_body.h, compiled per ISA under src/map/cpu/kernels/).
 */
#include "map/cpu/map_cpu_ops.h"

#include <string.h>

#include "core/isa.h"

#define ISA_ENTRY(isa)                                                                \
    oc_map_loop oc_map_cpu_loop_##isa(oc_map_op op, int t);                           \
    oc_map_loop oc_map_cpu_loop_scalar_##isa(oc_map_op op, int t, int value_operand); \
    oc_map_select_loop oc_map_cpu_select_##isa(oc_map_op cmp, int t, int q_value);    \
    oc_map_cast_loop oc_map_cpu_cast_##isa(int from, int to);                         \
    oc_map_fold_loop oc_map_cpu_minmax_##isa(int t, int is_max);
ISA_ENTRY(ref)
ISA_ENTRY(avx2)
ISA_ENTRY(avx512)

oc_map_loop oc_map_cpu_loop(oc_map_op op, int t)
{
    switch (oc_cpu_isa_get()) {
    case OC_CPU_ISA_AVX512:
        return oc_map_cpu_loop_avx512(op, t);
    case OC_CPU_ISA_AVX2:
        return oc_map_cpu_loop_avx2(op, t);
    default:
        return oc_map_cpu_loop_ref(op, t);
    }
}

oc_map_loop oc_map_cpu_loop_scalar(oc_map_op op, int t, int value_operand)
{
    switch (oc_cpu_isa_get()) {
    case OC_CPU_ISA_AVX512:
        return oc_map_cpu_loop_scalar_avx512(op, t, value_operand);
    case OC_CPU_ISA_AVX2:
        return oc_map_cpu_loop_scalar_avx2(op, t, value_operand);
    default:
        return oc_map_cpu_loop_scalar_ref(op, t, value_operand);
    }
}

oc_map_select_loop oc_map_cpu_select(oc_map_op cmp, int t, int q_value)
{
    switch (oc_cpu_isa_get()) {
    case OC_CPU_ISA_AVX512:
        return oc_map_cpu_select_avx512(cmp, t, q_value);
    case OC_CPU_ISA_AVX2:
        return oc_map_cpu_select_avx2(cmp, t, q_value);
    default:
        return oc_map_cpu_select_ref(cmp, t, q_value);
    }
}

oc_map_cast_loop oc_map_cpu_cast(int from, int to)
{
    switch (oc_cpu_isa_get()) {
    case OC_CPU_ISA_AVX512:
        return oc_map_cpu_cast_avx512(from, to);
    case OC_CPU_ISA_AVX2:
        return oc_map_cpu_cast_avx2(from, to);
    default:
        return oc_map_cpu_cast_ref(from, to);
    }
}

oc_map_fold_loop oc_map_cpu_minmax(int t, int is_max)
{
    switch (oc_cpu_isa_get()) {
    case OC_CPU_ISA_AVX512:
        return oc_map_cpu_minmax_avx512(t, is_max);
    case OC_CPU_ISA_AVX2:
        return oc_map_cpu_minmax_avx2(t, is_max);
    default:
        return oc_map_cpu_minmax_ref(t, is_max);
    }
}

void oc_map_cpu_fill(void *dst, int t, oc_map_value v, size_t n)
{
    switch (t) {
    case MT_BOOL:
        memset(dst, v.i != 0, n);
        break;
    case MT_I8:
        memset(dst, (int)(int8_t)v.i, n);
        break;
    case MT_U8:
        memset(dst, (int)(uint8_t)v.u, n);
        break;
    case MT_I16:
        for (size_t i = 0; i < n; i++) ((int16_t *)dst)[i] = (int16_t)v.i;
        break;
    case MT_I32:
        for (size_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)v.i;
        break;
    case MT_I64:
        for (size_t i = 0; i < n; i++) ((int64_t *)dst)[i] = v.i;
        break;
    case MT_U16:
        for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = (uint16_t)v.u;
        break;
    case MT_U32:
        for (size_t i = 0; i < n; i++) ((uint32_t *)dst)[i] = (uint32_t)v.u;
        break;
    case MT_U64:
        for (size_t i = 0; i < n; i++) ((uint64_t *)dst)[i] = v.u;
        break;
    case MT_F32:
        for (size_t i = 0; i < n; i++) ((float *)dst)[i] = (float)v.f;
        break;
    case MT_F64:
        for (size_t i = 0; i < n; i++) ((double *)dst)[i] = v.f;
        break;
    default:
        break;
    }
}

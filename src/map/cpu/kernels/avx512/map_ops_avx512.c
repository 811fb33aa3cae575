/* map_ops_avx512.c - the map interpreter's loops compiled for avx512 (map_cpu_ops_body.h). */
#define OC_MAP_ISA avx512
#include "map/cpu/map_cpu_ops_body.h"

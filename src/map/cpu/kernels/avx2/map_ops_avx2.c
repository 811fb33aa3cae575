/* map_ops_avx2.c - the map interpreter's loops compiled for avx2 (map_cpu_ops_body.h). */
#define OC_MAP_ISA avx2
#include "map/cpu/map_cpu_ops_body.h"

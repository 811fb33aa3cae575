/* map_ops_ref.c - the map interpreter's loops compiled for ref (map_cpu_ops_body.h). */
#define OC_MAP_ISA ref
#include "map/cpu/map_cpu_ops_body.h"

/*
 * map_guard.h - reading mapped input files that may shrink under the reader.
 *
 * A page of a shared file mapping that lies past the end of a file truncated since it was
 * mapped raises SIGBUS when read, which would end the process (and a host application with
 * it). While at least one mapping is registered here, a SIGBUS handler is installed: a fault
 * inside a registered mapping marks it, maps zero pages over the rest of that mapping and
 * lets the reader go on; the reader then asks oc_map_guard_faulted and reports the change
 * instead of its result. The mark comes before the zeros, so no thread reads a zero page of
 * a mapping that is not marked yet. This works on any thread (worker threads and driver
 * threads alike) and needs no unwinding through the reader's code. A fault anywhere else goes to the handler
 * that was installed before (the default one ends the process as it would have), and the last
 * mapping to go puts that handler back, so a host application keeps its own.
 */
#ifndef OC_IO_MAP_GUARD_H
#define OC_IO_MAP_GUARD_H

#include <stddef.h>

/* Registers [addr, addr + len) (a whole mapping); returns its slot, or -1 when the guard
 * cannot be set up (no memory for more slots, or the handler refused), and the mapping must
 * not be read. */
int oc_map_guard_add(const void *addr, size_t len);

/* Whether a read of slot's mapping met a page past the end of its file. */
int oc_map_guard_faulted(int slot);

/* Forgets slot (-1: nothing); call before unmapping. */
void oc_map_guard_remove(int slot);

#endif

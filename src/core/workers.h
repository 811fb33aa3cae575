/*
 * workers.h - the persistent thread pool of a context: one set of threads for the copies
 * that stage inputs and for the sinks that deliver outputs.
 *
 * Two kinds of work share the threads:
 *   - posted tasks (oc_workers_post), run in the order they were posted (FIFO): a sink's
 *     delivery of one staged block, for instance. The poster does not wait for them; it
 *     learns of their end through its own state (a staging slot released, a counter).
 *   - a split (oc_workers_split): one piece of work cut into parts that idle workers and
 *     the calling thread run together; the call returns when every part is done. Parts go
 *     before queued tasks, and the caller itself takes every part no worker has taken, so
 *     a split never waits behind posted tasks: with every worker busy it runs on the
 *     caller alone, which is what one thread copying would have done.
 * Why one pool and not one per kind: one set of threads is started once per context and
 * serves every job after it, whatever mix of copies and deliveries the job needs. A job
 * that needs both at once sizes the pool for both (sinks + copy threads) and caps the
 * posted tasks at its sinks (oc_workers_limit_tasks): with the deliveries holding every
 * worker, a split would otherwise run on its caller alone, and the driving thread copying
 * an upload by itself stops feeding the download queue (measured: a dense job lost a third
 * of its rate that way, bench/RESULTS.md).
 *
 * Threads: created by oc_workers_create and oc_workers_grow, joined by oc_workers_free.
 * Locks: one mutex guards the queue and the split; tasks run without it. Splits from
 * several threads at once are serialised (a second splitter waits for the first).
 */
#ifndef OC_CORE_WORKERS_H
#define OC_CORE_WORKERS_H

#include "outcore.h"

typedef struct oc_workers oc_workers;

typedef void (*oc_work_fn)(void *arg);
typedef void (*oc_split_fn)(void *arg, int part, int parts);

/* A pool of `threads` workers (at least 1). OC_ERR_NO_MEMORY when none can start; fewer
 * than asked (the system's thread limit) is not an error, see oc_workers_count. */
oc_status oc_workers_create(oc_context *ctx, int threads, oc_workers **out);

/* Starts workers until there are `threads`; never stops any. Same errors as create. */
oc_status oc_workers_grow(oc_context *ctx, oc_workers *w, int threads);

/* Runs every task still queued, then joins the workers and frees the pool. NULL: no-op. */
void oc_workers_free(oc_workers *w);

/* Workers started. */
int oc_workers_count(const oc_workers *w);

/* At most `limit` posted tasks run at once (0: no limit), so that the other workers stay
 * free for splits: a job's sinks then never hold the threads its uploads need. Set by the
 * job that uses the pool (a context runs one job at a time). */
void oc_workers_limit_tasks(oc_workers *w, int limit);

/* Queues fn(arg) to run on a worker. OC_ERR_NO_MEMORY when the queue cannot grow. */
oc_status oc_workers_post(oc_context *ctx, oc_workers *w, oc_work_fn fn, void *arg);

/* Runs fn(arg, part, parts) for part in [0, parts) on idle workers and the calling thread;
 * returns when all parts are done. Parts must not fail (they record failures themselves). */
void oc_workers_split(oc_workers *w, int parts, oc_split_fn fn, void *arg);
/* The same with at most `threads` parts running at once, the caller's included (0: any
 * number): a job that was asked for fewer threads than the pool has grown to keeps to them. */
void oc_workers_split_max(oc_workers *w, int parts, int threads, oc_split_fn fn, void *arg);

#endif

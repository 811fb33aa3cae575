/*
 * after_job.h - work a job leaves running when it returns.
 *
 * A GPU job's last step, giving back its streams, events, device memory and pinned staging,
 * needs nothing from the job's caller, and is a visible part of a short job on several
 * devices (the driver unmaps each device's memory from its peers: bench/RESULTS.md, "Several
 * GPUs"). It runs on a thread of its own after the job returns, beside the caller's next
 * steps (writing the output). Whatever looks at or needs what it gives back waits for it
 * first: a device's open (so no job plans with memory an earlier job still holds), the
 * calls on the memory contexts keep (oc_context_cached_memory_bytes, the releases),
 * oc_context_free and the process's exit. So after any of those nothing of an earlier job
 * is still held, and nothing the library started runs past its use.
 *
 * Process-wide, not per context: device memory is the device's, whichever context's job
 * held it. Thread-safe.
 */
#ifndef OC_CORE_AFTER_JOB_H
#define OC_CORE_AFTER_JOB_H

/* Runs fn(arg) on a thread of its own, or here and now when no thread can start. */
void oc_after_job(void (*fn)(void *arg), void *arg);

/* Between these, this thread's oc_after_job calls start only at the last go (nested pairs
 * count): a job holds its release until it has written its output, which the release's
 * frees would otherwise slow (a release beside a top-k job's commit more than doubled the
 * commit's time: bench/RESULTS.md, "Panels uploaded ahead on a thread; tiles on a
 * high-priority stream"). Held work counts as running for
 * oc_after_job_wait, which on the holding thread starts it first. */
void oc_after_job_hold(void);
void oc_after_job_go(void);

/* Returns once no work started by oc_after_job is running. Called on such a thread itself
 * (its work frees a context, whose free waits), it returns at once. */
void oc_after_job_wait(void);

#endif

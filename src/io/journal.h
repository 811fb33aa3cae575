/*
 * journal.h - the resume journal of a job (docs/design-notes.md, "Resume"): a text header
 * that says which job it belongs to, then append-only binary records of completed work.
 *
 *   header   "outcore-journal 1\n", then "key value\n" lines (the job: inputs, options that
 *            change the bytes), then "crc XXXXXXXX\n": the CRC-32 of everything before it
 *   record   uint32 magic, uint32 type, uint64 unit, uint32 len, uint32 crc, payload[len]
 *            (host byte order; crc covers type, unit, len and the payload)
 *
 * A record whose magic, length or CRC is wrong ends the journal: it is the one a crash cut
 * short (or damage), and it and everything after it are dropped when the journal is opened
 * for appending. Appends are buffered; oc_journal_flush writes them and fdatasyncs, and only
 * then are they part of the journal. This file knows nothing of what the records mean:
 * gram/gram_resume.c does.
 */
#ifndef OC_IO_JOURNAL_H
#define OC_IO_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "outcore.h"
#include "core/text_buf.h"

struct stat;
typedef struct oc_journal oc_journal;

/* The journal's name for an output: PATH.outcore-journal (malloc'd; NULL when out of memory). */
char *oc_journal_path_for(const char *output_path);

/* Whether output_path has a journal (any file under its name): a resumable job then reopens
 * its temporary, whose blocks are there already; without one it starts afresh. */
int oc_journal_present(const char *output_path);

/* Creates the journal at path with the header `job` (lines "key value\n"), written and
 * flushed under a temporary name (io.h's oc_tmpfile) and renamed to path before it returns;
 * the job holds its lock while it is open. */
oc_status oc_journal_create(oc_context *ctx, const char *path, const char *job, oc_journal **out);

/* Called for each valid record, in order; offset is where its payload starts in the file. A
 * nonzero return stops the scan there (that record and the rest are dropped). */
typedef int (*oc_journal_record_fn)(void *user, uint32_t type, uint64_t unit, const void *payload, uint32_t len,
                                    int64_t offset);

/* Says what it means that the journal's header line `have` (hl characters) is the job's
 * `want` (wl) no more; have_job is the journal's whole header (its lines, as `job` is the
 * job's). Writes the whole one-line message into buf, or leaves it empty for the default,
 * which quotes both lines. */
typedef void (*oc_journal_differ_fn)(void *user, const char *have_job, const char *have, size_t hl, const char *want,
                                     size_t wl, char *buf, size_t size);

/* Opens an existing journal for appending (never through a symbolic link; a journal that
 * another running job holds is refused): checks its header against `job` and calls fn on
 * each valid record. OC_ERR_INPUT with one line naming the journal and the first line that
 * differs (differ, which may be NULL, words it) or the damage when it belongs to another job.
 *
 * The header is compared line by line, in order, but for the lines that only name a file by
 * its path, "output PATH" and "TAG.path PATH" (oc_journal_describe_file): those are left out
 * of both sides. A path is a spelling (./a.npy, a.npy, /data/a.npy, one folder or another),
 * not an identity: an input is identified by its content (the lines TAG.size, TAG.mtime,
 * TAG.crc32 of the whole file, and the job's shape and rows' CRC), and the output by where
 * the journal lies (always OUTPUT.outcore-journal, beside it). So the same job resumes
 * whatever the spelling of its paths, while any other difference is refused. */
oc_status oc_journal_open(oc_context *ctx, const char *path, const char *job, oc_journal_differ_fn differ,
                          oc_journal_record_fn fn, void *user, oc_journal **out);

/* oc_journal_open in two steps: hold opens the journal and takes its lock (refused at once
 * when a running job holds it), so that a job that must first read its inputs whole to
 * describe itself holds the journal meanwhile (a second run or `outcore clean` is refused
 * then); load compares the header and scans the records as oc_journal_open does (on failure
 * the caller closes j). */
oc_status oc_journal_hold(oc_context *ctx, const char *path, oc_journal **out);
oc_status oc_journal_load(oc_context *ctx, oc_journal *j, const char *job, oc_journal_differ_fn differ,
                          oc_journal_record_fn fn, void *user);

/* Drops every record from the one whose payload starts at `offset` on: they are recomputed. */
oc_status oc_journal_truncate_before(oc_context *ctx, oc_journal *j, int64_t offset);

/* Reads len bytes of the payload at offset (from the record callback) into buf. */
oc_status oc_journal_read(oc_context *ctx, oc_journal *j, int64_t offset, void *buf, size_t len);

/* Buffers one record; oc_journal_flush makes it durable. */
oc_status oc_journal_append(oc_context *ctx, oc_journal *j, uint32_t type, uint64_t unit, const void *payload,
                            uint32_t len);
/* Writes the buffered records and fdatasyncs the journal. */
oc_status oc_journal_flush(oc_context *ctx, oc_journal *j);
/* Writes the buffered records without the fdatasync: for records that a later, flushed one
 * vouches for, whose buffer would otherwise grow with the job. */
oc_status oc_journal_write(oc_context *ctx, oc_journal *j);
/* Bytes of records buffered and not flushed yet. */
size_t oc_journal_pending(const oc_journal *j);

const char *oc_journal_name(const oc_journal *j);
/* The CRC-32 of the job's lines as the journal holds them (the header its first run wrote,
 * paths as that run spelled them): what the journal's side files name their job by, the same
 * whatever the spelling of this run's paths. */
uint32_t oc_journal_job_crc(const oc_journal *j);

/* Helpers of the jobs that keep a journal (gram/gram_resume*.c, matmul/matmul_resume.c). */
/* A journal (or side file) name that holds something else than a regular file is refused
 * (OC_ERR_INPUT naming it and `what`): nothing is written or read through a planted link.
 * Sets *exists. */
oc_status oc_journal_side_check(oc_context *ctx, const char *path, const char *what, int *exists);

/* The refusal of a job run without --resume on an output that has the journal jpath: that
 * an interrupted job left it (how to continue or clean it), or that a running job holds it. */
oc_status oc_journal_refuse_without_resume(oc_context *ctx, const char *jpath, const char *out_path);

/* The seconds between two checkpoints of a resumable job (OUTCORE_RESUME_INTERVAL, else
 * OC_JOURNAL_INTERVAL_DEFAULT) and the tile count after which it kills itself for the tests
 * (OUTCORE_RESUME_KILL_AFTER, else 0: never); a value that is not what docs/environment.md
 * says is refused, naming the variable (OC_ERR_INVALID_ARGUMENT). */
#define OC_JOURNAL_INTERVAL_DEFAULT 2.0
oc_status oc_journal_env(oc_context *ctx, double *interval, int64_t *kill_after);
/* The header lines "TAG.path", "TAG.size", "TAG.mtime" and "TAG.crc32" (the CRC-32 of the
 * whole file, read once) of the input file path, whose stat is sb. */
oc_status oc_journal_describe_file(oc_context *ctx, oc_text *t, const char *tag, const char *path,
                                   const struct stat *sb);
/* A dense tile on record: its index and the CRC-32 of its bytes in the output. */
typedef struct oc_journal_tile {
    int64_t index;
    uint32_t crc;
} oc_journal_tile;
/* Appends a TILE record (unit = index, payload = the 4-byte CRC) to *list (*count of them);
 * nonzero for a record of another length or out of memory: the scan stops there. */
int oc_journal_tile_add(oc_journal_tile **list, int64_t *count, uint64_t unit, const void *payload, uint32_t len);
/* The temporary of out_path that a TEMP record's payload (len bytes) names, as this job
 * spells it (malloc'd), or NULL. The record holds the path the first run spelled
 * (./C.npy.tmp-PID-RANDOM); the temporary lies beside the output, as the journal does, so
 * only its name part counts: it must be the output's own, OUT.tmp-... with no '/' (and no
 * NUL) in it, and the path is rebuilt from out_path's folder. Any other name is damage, or
 * planted: it gives NULL, and no file outside the output's own names is ever reopened or
 * removed. */
char *oc_journal_temp_of(const char *out_path, const void *payload, size_t len);
/* Removes the journal at jpath when the run that kept it renamed its result into place and was
 * stopped before it removed the journal (the window between a commit's rename and the
 * journal's removal): the temporary it recorded, temp, is gone and out_path is a regular
 * file. Such a journal has nothing to resume from: *dropped is then 1, and the caller starts
 * the job again as if it had found none. *dropped is 0 without temp. */
oc_status oc_journal_drop_committed(oc_context *ctx, const char *jpath, const char *temp, const char *out_path,
                                    int *dropped);
/* What a job that keeps a journal (gram/gram_resume.c, matmul/matmul_resume.c) gives
 * oc_journal_start: its output, and the hooks over its own record of the journal, each called
 * with user. */
typedef struct oc_journal_keeper {
    const char *out_path; /* the output; its journal is oc_journal_path_for(out_path) */
    const char *longest;  /* the longest suffix the job puts on out_path for a file of its own */
    int resume;           /* the job is resumable (--resume); else a journal found is refused */
    void *user;
    /* Makes the job's record, with the journal's name and settings (oc_journal_env). */
    oc_status (*make)(oc_context *ctx, void *user, const char *jpath, double interval, int64_t kill_after);
    /* Frees what make made, whether or not it succeeded. */
    void (*drop)(void *user);
    /* Once the journal found (found) is held, or none was: may be NULL. */
    oc_status (*held)(oc_context *ctx, void *user, int found);
    /* The job's header lines (malloc'd into *text; `job` of oc_journal_create). */
    oc_status (*describe)(oc_context *ctx, void *user, char **text);
    /* Each valid record of the journal found (oc_journal_load's fn). */
    oc_journal_record_fn record;
    /* The temporary those records named, or NULL (oc_journal_drop_committed's temp). */
    const char *(*temp)(void *user);
} oc_journal_keeper;

/* Starts a job's journal. Without k->resume: OC_OK with *journal NULL when the output has
 * no journal, else the refusal (oc_journal_refuse_without_resume). With it: refuses an
 * output whose name leaves no room for k->longest (oc_output_name_fits) and bad settings
 * (oc_journal_env); makes the job's record; holds the journal found (oc_journal_hold);
 * describes the job; then loads the journal found, a header that differs on an input's line
 * worded as the input having changed or being another, or creates the journal. A journal
 * whose run was stopped after its commit (oc_journal_drop_committed) is removed, the record
 * dropped, and the start begun again. On success *journal is the journal (the caller's to
 * close) and *resumed whether it was found; on failure the record is dropped and *journal is
 * NULL. */
oc_status oc_journal_start(oc_context *ctx, const oc_journal_keeper *k, oc_journal **journal, int *resumed);
/* Closes the journal (its file stays). NULL is a no-op. */
void oc_journal_close(oc_journal *j);

#endif

/*
 * journal_start.h - a resumable job's journal found, checked against the job and kept, or
 * started (oc_journal_start), and the helpers the jobs that keep one share
 * (gram/gram_resume*.c, matmul/matmul_resume.c): side files checked, inputs described, tiles
 * on record, the recorded temporary. The file format itself is journal.h's.
 */
#ifndef OC_IO_JOURNAL_START_H
#define OC_IO_JOURNAL_START_H

#include <stddef.h>
#include <stdint.h>

#include "core/text_buf.h"
#include "io/journal.h"
#include "outcore.h"

struct stat;

/* A journal (or side file) name that holds something else than a regular file is refused
 * (OC_ERR_INPUT naming it and `what`): nothing is written or read through a planted link.
 * Sets *exists. */
oc_status oc_journal_side_check(oc_context *ctx, const char *path, const char *what, int *exists);

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
/* What a job that keeps a journal (gram/gram_resume.c, matmul/matmul_resume.c) gives
 * oc_journal_start: its output, and the hooks over its own record of the journal, each called
 * with user. */
typedef struct oc_journal_keeper {
    const char *out_path; /* the output; its journal is oc_journal_path_for(out_path) */
    const char *longest;  /* the longest suffix the job puts on out_path for a file of its own */
    int resume;           /* the job is resumable (--resume); else a journal found is refused */
    void *user;
    /* Makes the job's record, with the journal's name and settings (journal_env). */
    oc_status (*make)(oc_context *ctx, void *user, const char *jpath, double interval, int64_t kill_after);
    /* Frees what make made, whether or not it succeeded. */
    void (*drop)(void *user);
    /* Once the journal found (found) is held, or none was: may be NULL. */
    oc_status (*held)(oc_context *ctx, void *user, int found);
    /* The job's header lines (malloc'd into *text; `job` of oc_journal_create). */
    oc_status (*describe)(oc_context *ctx, void *user, char **text);
    /* Each valid record of the journal found (oc_journal_load's fn). */
    oc_journal_record_fn record;
    /* The temporary those records named, or NULL (drop_committed's temp). */
    const char *(*temp)(void *user);
} oc_journal_keeper;

/* Starts a job's journal. Without k->resume: OC_OK with *journal NULL when the output has
 * no journal, else the refusal (refuse_without_resume). With it: refuses an
 * output whose name leaves no room for k->longest (oc_output_name_fits) and bad settings
 * (journal_env); makes the job's record; holds the journal found (oc_journal_hold);
 * describes the job; then loads the journal found, a header that differs on an input's line
 * worded as the input having changed or being another, or creates the journal. A journal
 * whose run was stopped after its commit (drop_committed) is removed, the record
 * dropped, and the start begun again. On success *journal is the journal (the caller's to
 * close) and *resumed whether it was found; on failure the record is dropped and *journal is
 * NULL. */
oc_status oc_journal_start(oc_context *ctx, const oc_journal_keeper *k, oc_journal **journal, int *resumed);

#endif

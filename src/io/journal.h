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
 * the caller closes j). The lock is taken on the open file and removals go by name: hold
 * keeps a file that path still names once it is locked, opens afresh the one now under that
 * name, and sets *out to NULL with OC_OK when none is there any more (another process removed
 * the journal meanwhile, as `outcore clean` does: no journal to resume from). */
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

/* Closes the journal (its file stays). NULL is a no-op. */
void oc_journal_close(oc_journal *j);

#endif

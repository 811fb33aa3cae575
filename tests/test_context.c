/*
 * test_context.c - the context's last error when several threads of one job fail at once (a
 * device part's upload thread beside its driving thread, copy threads reading rows): after
 * they are done the message is one of the messages written, whole, with its own status and
 * one trace frame per OC_CHECK that forwarded it.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "harness.h"

enum { WRITERS = 4, ROUNDS = 20000 };

static oc_context *ctx;
static const oc_status statuses[WRITERS] = {OC_ERR_IO, OC_ERR_DEVICE, OC_ERR_NO_MEMORY, OC_ERR_INPUT};

/* Messages of different lengths, so that a torn one could not pass for another. */
static void message_of(int writer, char *buf, size_t size)
{
    int n = snprintf(buf, size, "writer %d failed:", writer);
    for (int i = 0; i < 40 * (writer + 1) && n + 2 < (int)size; ++i) buf[n++] = (char)('a' + writer);
    buf[n] = '\0';
}

static oc_status fail_once(int writer)
{
    char msg[OC_MESSAGE_MAX];
    message_of(writer, msg, sizeof msg);
    return oc_fail(ctx, statuses[writer], "%s", msg);
}

static oc_status forward(int writer)
{
    OC_CHECK(ctx, fail_once(writer));
    return OC_OK;
}

static void *writer_main(void *arg)
{
    int writer = (int)(size_t)arg;
    for (int r = 0; r < ROUNDS; ++r) (void)forward(writer);
    return NULL;
}

int main(void)
{
    CHECK(oc_context_create(&ctx) == OC_OK);
    pthread_t t[WRITERS];
    for (int w = 0; w < WRITERS; ++w) CHECK(pthread_create(&t[w], NULL, writer_main, (void *)(size_t)w) == 0);
    for (int w = 0; w < WRITERS; ++w) pthread_join(t[w], NULL);
    const char *got = oc_context_last_error(ctx);
    int which = -1;
    for (int w = 0; w < WRITERS; ++w) {
        char msg[OC_MESSAGE_MAX];
        message_of(w, msg, sizeof msg);
        if (strcmp(got, msg) == 0) which = w;
    }
    CHECK_MSG(which >= 0, "the last error is none of the messages written whole: \"%.80s...\"", got);
    if (which >= 0)
        CHECK_MSG(ctx->status == statuses[which], "status %d with writer %d's message", (int)ctx->status, which);
    /* The last write's frame and one more, of the OC_CHECK that forwarded it: no frame of a
     * write the last one replaced. */
    int frames = 0;
    for (const char *p = oc_context_error_trace(ctx); (p = strstr(p, "  at ")) != NULL; p += 5) ++frames;
    CHECK_MSG(frames >= 1 && frames <= 2 * WRITERS, "%d trace frames", frames);
    oc_context_free(ctx);
    return oc_test_finish();
}

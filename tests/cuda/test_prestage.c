/*
 * test_prestage.c - a resident plan's uploads ahead (engine/cuda/engine_prestage.h) and the panel
 * exchange's owners (engine/cuda/panel_exchange.h), without a GPU: the uploads are host callbacks.
 * Checked: the thread uploads its keys in order and a wait returns once its key is done; a
 * wait for a key not its own returns 0 at once; a failed upload gives up the keys after it
 * (give_up called for each, waits return 0, the status is the upload's); stopping early gives
 * up what is left; the exchange deals keys round the devices in need order, a claim of an
 * owned key waits until it is published or withdrawn, and an owner that never started
 * (abandon) lets a waiting claim take its panels over.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "engine/cuda/engine_prestage.h"
#include "engine/cuda/panel_exchange.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

typedef struct uploads {
    int64_t order[16];
    atomic_int count;
    int64_t fail_key; /* this key's upload fails (-1: none) */
    long delay_ms;    /* each upload takes this long */
    atomic_int given_up;
    unsigned char gave_up[16];
} uploads;

static oc_status fake_upload(void *user, int64_t key)
{
    uploads *u = user;
    sleep_ms(u->delay_ms);
    if (key == u->fail_key) return OC_ERR_IO;
    u->order[atomic_fetch_add(&u->count, 1)] = key;
    return OC_OK;
}

static void fake_give_up(void *user, int64_t key)
{
    uploads *u = user;
    u->gave_up[key] = 1;
    atomic_fetch_add(&u->given_up, 1);
}

static void check_in_order(oc_context *ctx)
{
    uploads u = {.fail_key = -1, .delay_ms = 5};
    const int64_t keys[4] = {6, 0, 4, 2};
    oc_prestage_ops ops = {.user = &u, .upload = fake_upload, .give_up = fake_give_up};
    oc_prestage *p = NULL;
    CHECK(oc_prestage_start(ctx, -1, keys, 4, 8, &ops, &p) == OC_OK);
    double waited = 0;
    CHECK_EQ_I64(oc_prestage_wait(p, 1, 0, &waited), 0); /* not its key: at once */
    CHECK_EQ_I64(oc_prestage_wait(p, 2, 0, &waited), 1); /* the last: waits for all four */
    CHECK_EQ_I64(atomic_load(&u.count), 4);
    CHECK(waited > 0);
    for (int i = 0; i < 4; ++i) CHECK_EQ_I64(u.order[i], keys[i]);
    CHECK_EQ_I64(oc_prestage_wait(p, 6, 1, &waited), 1);
    CHECK(oc_prestage_end(p, 0) == OC_OK);
    CHECK_EQ_I64(atomic_load(&u.given_up), 0);
}

static void check_failure(oc_context *ctx)
{
    uploads u = {.fail_key = 3, .delay_ms = 1};
    const int64_t keys[5] = {0, 1, 3, 5, 7};
    oc_prestage_ops ops = {.user = &u, .upload = fake_upload, .give_up = fake_give_up};
    oc_prestage *p = NULL;
    CHECK(oc_prestage_start(ctx, -1, keys, 5, 8, &ops, &p) == OC_OK);
    CHECK_EQ_I64(oc_prestage_wait(p, 7, 0, NULL), 0); /* given up after the failure */
    CHECK_EQ_I64(oc_prestage_wait(p, 3, 0, NULL), 0); /* the failed one itself */
    CHECK_EQ_I64(oc_prestage_wait(p, 1, 0, NULL), 1);
    CHECK(oc_prestage_status(p) == OC_ERR_IO);
    CHECK(oc_prestage_end(p, 0) == OC_ERR_IO);
    CHECK_EQ_I64(atomic_load(&u.count), 2);
    /* The failed key is its upload's to withdraw; the thread gives up only those after it. */
    CHECK(!u.gave_up[3] && u.gave_up[5] && u.gave_up[7] && !u.gave_up[1]);
}

static void check_stop(oc_context *ctx)
{
    uploads u = {.fail_key = -1, .delay_ms = 20};
    const int64_t keys[6] = {0, 1, 2, 3, 4, 5};
    oc_prestage_ops ops = {.user = &u, .upload = fake_upload, .give_up = fake_give_up};
    oc_prestage *p = NULL;
    CHECK(oc_prestage_start(ctx, -1, keys, 6, 6, &ops, &p) == OC_OK);
    CHECK_EQ_I64(oc_prestage_wait(p, 5, 1, NULL), -1); /* not yet */
    CHECK_EQ_I64(oc_prestage_wait(p, 0, 0, NULL), 1);
    CHECK(oc_prestage_end(p, 1) == OC_OK);
    int done = atomic_load(&u.count), gave = atomic_load(&u.given_up);
    CHECK(done >= 1 && done < 6);
    CHECK_EQ_I64(done + gave, 6);
}

typedef struct claimer {
    oc_panel_exchange *x;
    int64_t key;
    int result;
} claimer;

static void *claim_thread(void *arg)
{
    claimer *c = arg;
    oc_panel_source from;
    c->result = oc_panel_exchange_claim(c->x, c->key, &from);
    return NULL;
}

static void check_exchange(oc_context *ctx)
{
    oc_panel_exchange *x = NULL;
    CHECK(oc_panel_exchange_create(ctx, 8, &x) == OC_OK);
    const int64_t need[5] = {0, 2, 4, 6, 1};
    CHECK(oc_panel_exchange_assign(ctx, x, need, 5, 2) == OC_OK);
    int64_t mine[8];
    CHECK_EQ_I64(oc_panel_exchange_owned(x, 0, mine), 3);
    CHECK(mine[0] == 0 && mine[1] == 4 && mine[2] == 1);
    CHECK_EQ_I64(oc_panel_exchange_owned(x, 1, mine), 2);
    CHECK(mine[0] == 2 && mine[1] == 6);
    oc_panel_source from;
    CHECK_EQ_I64(oc_panel_exchange_try_claim(x, 2, &from), 0);               /* its owner has not published */
    CHECK_EQ_I64(oc_panel_exchange_try_claim(x, 3, &from), OC_PANEL_UPLOAD); /* nobody's: take it */
    /* A claim waits for the owner's publication. */
    claimer c = {x, 0, -1};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, claim_thread, &c) == 0);
    sleep_ms(20);
    CHECK_EQ_I64(c.result, -1);
    static int panel;
    oc_panel_exchange_publish(x, 0, &panel, 0, NULL);
    pthread_join(th, NULL);
    CHECK_EQ_I64(c.result, OC_PANEL_COPY);
    CHECK_EQ_I64(oc_panel_exchange_try_claim(x, 0, &from), OC_PANEL_COPY);
    CHECK(from.ptr == &panel && from.device == 0);
    /* Device 1 never starts: a claim waiting for its panel 6 takes it over. */
    claimer c6 = {x, 6, -1};
    CHECK(pthread_create(&th, NULL, claim_thread, &c6) == 0);
    sleep_ms(20);
    CHECK_EQ_I64(c6.result, -1);
    oc_panel_exchange_abandon(x, 1);
    pthread_join(th, NULL);
    CHECK_EQ_I64(c6.result, OC_PANEL_UPLOAD);
    CHECK_EQ_I64(oc_panel_exchange_try_claim(x, 2, &from), OC_PANEL_UPLOAD);
    /* A withdrawn panel goes to the next claim. */
    CHECK_EQ_I64(oc_panel_exchange_try_claim(x, 4, &from), 0);
    oc_panel_exchange_withdraw(x, 4);
    CHECK_EQ_I64(oc_panel_exchange_try_claim(x, 4, &from), OC_PANEL_UPLOAD);
    CHECK_EQ_I64(oc_panel_exchange_try_claim(x, 4, &from), 0);
    oc_panel_exchange_free(x);
}

int main(void)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    check_in_order(ctx);
    check_failure(ctx);
    check_stop(ctx);
    check_exchange(ctx);
    oc_context_free(ctx);
    return oc_test_finish();
}

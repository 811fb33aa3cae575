/* map_explain.c - `outcore map --explain`: what a map job will do, as text or JSON. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/text_buf.h"
#include "core/threads.h"
#include "map/map_plan.h"
#include "map/map_types.h"

static const char *reduce_name(oc_map_reduce r) { return oc_map_reduce_name(r) ? oc_map_reduce_name(r) : "?"; }

oc_status oc_map_explain(oc_context *ctx, const oc_map *m, int json, char **text)
{
    if (!m || !text) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_map_explain: NULL argument");
    /* In double: a broadcast's element count times its size can pass 2^63 (the job refuses
     * such an output; the explanation still says how large it would be). */
    double in_bytes = 0;
    for (int i = 0; i < m->n_inputs; i++)
        if (m->inputs[i].used) in_bytes += (double)m->inputs[i].count * (double)oc_mt_size(m->inputs[i].type);
    const double out_bytes = (double)m->out_count * (double)oc_mt_size(m->out_type);
    int threads = oc_threads_resolve(m->opts.threads);
    char shape[512], oshape[512];
    int64_t dims[OC_MAP_MAX_DIMS];
    oc_map_user_shape(m, m->ndim, m->shape, dims);
    oc_map_shape_text(m->ndim, dims, shape, sizeof shape);
    oc_map_shape_text(oc_map_result_shape(m, dims), dims, oshape, sizeof oshape);
    oc_map_choice choice;
    OC_CHECK(ctx, oc_map_choose(ctx, m, &choice));
    const char *why = choice.explain;
    const char *where = choice.backend->name;
    char threads_text[48];
    snprintf(threads_text, sizeof threads_text, " with %d thread%s", threads, threads == 1 ? "" : "s");
    oc_text b = {0};
    if (json) {
        oc_text_printf(&b, "{\"expression\": ");
        oc_text_json_string(&b, m->text);
        oc_text_printf(&b, ", \"backend\": \"%s\", \"reason\": ", where);
        oc_text_json_string(&b, why);
        oc_text_printf(&b,
                       ", \"threads\": %d, "
                       "\"expr_dtype\": \"%s\", \"out_dtype\": \"%s\", \"reduce\": \"%s\", \"axis\": %d, "
                       "\"elements\": %" PRId64 ", \"bytes_in\": %.0f, \"bytes_out\": %.0f}\n",
                       threads, oc_mt_name(m->expr_type), oc_mt_name(m->out_type), reduce_name(m->reduce),
                       oc_map_user_axis(m), m->count, in_bytes, out_bytes);
    } else {
        oc_text_shown(&b, m->text);
        oc_text_printf(
            &b, " over %s (%" PRId64 " elements, %s): reads %.0f bytes, writes %.0f bytes of %s %s%s%s; %s%s: ", shape,
            m->count, oc_mt_name(m->expr_type), in_bytes, out_bytes, oc_mt_name(m->out_type), oshape,
            m->reduce ? ", reduced by " : "", m->reduce ? reduce_name(m->reduce) : "", where,
            choice.backend == &oc_map_backend_cpu ? threads_text : "");
        oc_text_shown(&b, why); /* it quotes the expression */
        oc_text_printf(&b, "\n");
    }
    return oc_text_finish(ctx, &b, text);
}

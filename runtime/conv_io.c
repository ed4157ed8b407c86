/* Activation reorders around convolutions (see onednn_layout.h). */
#include <string.h>

#include "runtime/kernel.h"
#include "runtime/onednn_layout.h"

bool dqg_md_dense_channels_last(const dnnl_memory_desc_t *md)
{
    int r = md->ndims;
    if (r < 3 || r > 5)
        return false;
    dnnl_format_tag_t tag = r == 3 ? dnnl_acb : r == 4 ? dnnl_acdb : dnnl_acdeb;
    dnnl_memory_desc_t cl;
    return dnnl_memory_desc_init_by_tag(&cl, r, md->dims, md->data_type, tag) == dnnl_success &&
           dnnl_memory_desc_equal(&cl, md);
}

void dqg_conv_io_plan(dqg_conv_io *io, const dnnl_memory_desc_t *md_x,
                      const dnnl_memory_desc_t *md_y, dqg_data_format f)
{
    memset(io, 0, sizeof *io);
    io->src = *md_x;
    io->dst = *md_y;
    if (f != DQG_FORMAT_NCX)
        return; /* NXC activations are channels-last already */
    dnnl_format_tag_t tag = md_x->ndims == 3 ? dnnl_acb : md_x->ndims == 4 ? dnnl_acdb : dnnl_acdeb;
    dnnl_memory_desc_init_by_tag(&io->src, md_x->ndims, md_x->dims, md_x->data_type, tag);
    dnnl_memory_desc_init_by_tag(&io->dst, md_y->ndims, md_y->dims, md_y->data_type, tag);
}

dqg_status dqg_conv_io_finish(dqg_conv_io *io, const_dnnl_primitive_desc_t pd,
                              const dnnl_memory_desc_t *md_x, const dnnl_memory_desc_t *md_y,
                              size_t offset, size_t *bytes, char *why, size_t why_size,
                              const char *what)
{
    io->src = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    io->dst = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    *bytes = 0;
    dqg_status st;
    if (!dnnl_memory_desc_equal(md_x, &io->src)) {
        if ((st = dqg_dnnl_reorder_prim(&io->src_reorder, md_x, &io->src, what)) != DQG_OK)
            return st;
        io->reorder_src = true;
        io->src_offset = offset;
        *bytes += (dnnl_memory_desc_get_size(&io->src) + 63) & ~(size_t)63;
    }
    if (!dnnl_memory_desc_equal(md_y, &io->dst)) {
        if ((st = dqg_dnnl_reorder_prim(&io->dst_reorder, &io->dst, md_y, what)) != DQG_OK)
            return st;
        io->reorder_dst = true;
        io->dst_offset = offset + *bytes;
        *bytes += (dnnl_memory_desc_get_size(&io->dst) + 63) & ~(size_t)63;
    }
    if (io->reorder_src || io->reorder_dst) {
        /* After what `why` already says (an implementation skipped). */
        size_t len = strlen(why);
        snprintf(why + len, why_size - len, "%sreorders its %s to and from channels-last",
                 len ? "; " : "",
                 io->reorder_src && io->reorder_dst ? "source and result"
                 : io->reorder_src                  ? "source"
                                                    : "result");
    }
    return DQG_OK;
}

dqg_status dqg_conv_io_begin(dqg_conv_io *io, void *user_src, void *user_dst, void *scratch,
                             void *pad, void **src, void **dst, const char *what)
{
    *src = user_src;
    *dst = io->reorder_dst ? (char *)scratch + io->dst_offset : user_dst;
    if (!io->reorder_src)
        return DQG_OK;
    void *to = (char *)scratch + io->src_offset;
    void *h[2] = {user_src, to};
    *src = to;
    return dqg_dnnl_prim_execute(&io->src_reorder, h, pad, what);
}

dqg_status dqg_conv_io_end(dqg_conv_io *io, void *dst, void *user_dst, void *pad, const char *what)
{
    if (!io->reorder_dst)
        return DQG_OK;
    void *h[2] = {dst, user_dst};
    return dqg_dnnl_prim_execute(&io->dst_reorder, h, pad, what);
}

size_t dqg_conv_io_scratchpad(const dqg_conv_io *io)
{
    size_t a = dqg_dnnl_scratchpad(&io->src_reorder), b = dqg_dnnl_scratchpad(&io->dst_reorder);
    return a > b ? a : b;
}

void dqg_conv_io_destroy(dqg_conv_io *io)
{
    dqg_dnnl_prim_destroy(&io->src_reorder);
    dqg_dnnl_prim_destroy(&io->dst_reorder);
}

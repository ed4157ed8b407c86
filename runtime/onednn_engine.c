/* The one oneDNN CPU engine every oneDNN kernel uses, created on first use. */
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>

#include "runtime/kernel.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;

static void create_engine(void)
{
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success)
        engine = NULL;
}

void *dqg_onednn_engine(void)
{
    pthread_once(&once, create_engine);
    return engine;
}

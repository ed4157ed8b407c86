/* The library's run-time version: what a program linked against the shared
 * library can compare with the header it was compiled with. */
#include "dqgraph.h"

const char *dqg_version(void)
{
    return DQG_VERSION_STRING;
}

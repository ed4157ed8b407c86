/* dqg_version(): the linked library's version, the header's macros, one number. */
#include <stdio.h>

#include "test_common.h"

Test(version, library_matches_header)
{
    cr_assert_str_eq(dqg_version(), DQG_VERSION_STRING);
    char built[32];
    snprintf(built, sizeof built, "%d.%d.%d", DQG_VERSION_MAJOR, DQG_VERSION_MINOR,
             DQG_VERSION_PATCH);
    cr_assert_str_eq(dqg_version(), built);
    /* A static string: the same pointer every time. */
    cr_assert_eq(dqg_version(), dqg_version());
}

/* `dqgraph selftest` (see selftest.c). */
#ifndef DQG_TOOLS_SELFTEST_H
#define DQG_TOOLS_SELFTEST_H

/* argv[1] is "selftest"; returns the exit status. */
int dqg_tool_selftest(int argc, char **argv);

#endif

/* A main() for a fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput
 * once on each file named on the command line. GCC builds (which have no
 * libFuzzer) use it to replay the seed corpora and the saved reproducers of
 * bugs found earlier (tests/corpus/fuzz/) as ordinary tests, under the same
 * sanitizers as the rest of the suite. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional in a target, as in libFuzzer. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int replay(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    uint8_t *data = NULL;
    size_t size = 0, cap = 0, got;
    int rc = 0;
    do {
        if (size == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *p = realloc(data, cap);
            if (!p) {
                fprintf(stderr, "%s: out of memory\n", path);
                rc = 1;
                break;
            }
            data = p;
        }
        got = fread(data + size, 1, cap - size, f);
        size += got;
    } while (got > 0);
    if (!rc && ferror(f)) {
        perror(path);
        rc = 1;
    }
    fclose(f);
    if (!rc) {
        LLVMFuzzerTestOneInput(size ? data : (const uint8_t *)"", size);
        printf("replayed %s (%zu bytes)\n", path, size);
    }
    free(data);
    return rc;
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE...\n", argv[0]);
        return 2;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++)
        rc |= replay(argv[i]);
    return rc;
}

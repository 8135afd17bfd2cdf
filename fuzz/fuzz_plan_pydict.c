/* vLLM's "non-default args" dict on arbitrary bytes: fails with a message, or gives words
 * that are all strings, flags first. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hbm/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char **argv;
    int argc;
    hbm_err err = {{0}};
    if (hbm_plan_argv_from_pydict((const char *)data, size, &argv, &argc, &err) == 0) {
        if (argc > 0 && strncmp(argv[0], "--", 2) != 0)
            abort();
        for (int i = 0; i < argc; i++)
            if (!argv[i])
                abort();
        if (argv[argc])
            abort();
        hbm_plan_argv_free(argv, argc);
    } else if (!err.msg[0]) {
        abort();
    }
    return 0;
}

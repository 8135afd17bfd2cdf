/* Runs a libFuzzer target without libFuzzer: every file of a corpus directory, then
 * deterministic mutations of each (truncations, byte flips, splices), so the parsers meet
 * broken input in every test run, with any compiler. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void run_mutations(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size + 64);
    if (!buf)
        abort();
    for (int round = 0; round < 64; round++) {
        size_t n = size;
        memcpy(buf, data, size);
        switch (round % 4) {
        case 0: /* truncate */
            n = size ? rng() % size : 0;
            break;
        case 1: /* flip bytes */
            for (int k = 0; k < 4 && size; k++)
                buf[rng() % size] ^= (uint8_t)(1u << (rng() % 8));
            break;
        case 2: /* interesting bytes */
            for (int k = 0; k < 4 && size; k++) {
                static const uint8_t pick[] = {0, '|', '+', '/', '-', '\n', '"', '{', '}',
                                               '9', ' ', 0xff, '\t', ':'};
                buf[rng() % size] = pick[rng() % sizeof pick];
            }
            break;
        case 3: /* duplicate a chunk at the end */
            if (size) {
                size_t off = rng() % size, len = rng() % 64;
                if (off + len > size)
                    len = size - off;
                memcpy(buf + size, data + off, len);
                n = size + len;
            }
            break;
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    free(buf);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        perror(argv[1]);
        return 2;
    }
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        uint8_t *data = NULL;
        size_t size = 0, cap = 0, got;
        uint8_t chunk[65536];
        while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
            if (size + got > cap) {
                cap = (size + got) * 2;
                data = realloc(data, cap);
                if (!data)
                    abort();
            }
            memcpy(data + size, chunk, got);
            size += got;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(data ? data : (const uint8_t *)"", size);
        run_mutations(data ? data : (const uint8_t *)"", size);
        free(data);
        files++;
    }
    closedir(d);
    if (files == 0) {
        fprintf(stderr, "%s: empty corpus\n", argv[1]);
        return 1;
    }
    printf("%d corpus files replayed with mutations\n", files);
    return 0;
}

/* safetensors headers: an 8-byte little-endian length, then that many bytes of JSON naming
 * every tensor's dtype, shape and byte range. Only the header is read, never the data, so
 * a 140 GB checkpoint is measured in milliseconds and exactly. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hbm/plan.h"
#include "plan/plan_int.h"

/* The format caps the header at 100 MB; anything larger is a corrupt length. */
#define ST_HEADER_MAX (100LL * 1000 * 1000)

/* Element size in bits (fp4 packs two per byte); 0 for unknown dtypes. */
static int dtype_bits(const char *d)
{
    static const struct {
        const char *name;
        int bits;
    } t[] = {{"F64", 64}, {"F32", 32}, {"F16", 16}, {"BF16", 16}, {"I64", 64}, {"U64", 64},
             {"I32", 32}, {"U32", 32}, {"I16", 16}, {"U16", 16}, {"I8", 8},    {"U8", 8},
             {"BOOL", 8}, {"F8_E4M3", 8}, {"F8_E5M2", 8}, {"F8_E8M0", 8}, {"F8_E4M3FN", 8},
             {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"F4", 4}, {"C64", 64}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(d, t[i].name))
            return t[i].bits;
    return 0;
}

static bool is_embedding(const char *name)
{
    return strstr(name, "embed_tokens") || strstr(name, "lm_head") || strstr(name, "wte.") ||
           strstr(name, "word_embeddings") || strstr(name, "embed_out") ||
           strstr(name, "tok_embeddings") || strstr(name, "output.weight") == name;
}

int hbm_plan_safetensors_parse(const uint8_t *buf, size_t len, uint64_t file_size,
                               const char *name, hbm_plan_st_sum *sum, hbm_err *err)
{
    memset(sum, 0, sizeof *sum);
    if (file_size < 8 || len < 8)
        return hbm_err_set(err, "%s: %llu bytes: too short for a safetensors header (8-byte "
                                "length at offset 0)",
                           name, (unsigned long long)file_size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | buf[i];
    if (hlen > file_size - 8)
        return hbm_err_set(err, "%s: header length %llu at offset 0 is larger than the file "
                                "(%llu bytes): truncated or not safetensors",
                           name, (unsigned long long)hlen, (unsigned long long)file_size);
    if (hlen > (uint64_t)ST_HEADER_MAX || hlen < 2)
        return hbm_err_set(err, "%s: header length %llu at offset 0 is absurd (limit %lld): "
                                "corrupt file",
                           name, (unsigned long long)hlen, ST_HEADER_MAX);
    if (len - 8 < hlen)
        return hbm_err_set(err, "%s: header cut short: %zu of %llu bytes at offset 8", name,
                           len - 8, (unsigned long long)hlen);
    sum->header_len = (int64_t)hlen;
    json_error_t je;
    json_t *root = json_loadb((const char *)buf + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return hbm_err_set(err, "%s: header JSON at offset %d: %s", name, 8 + je.position,
                           je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return hbm_err_set(err, "%s: header at offset 8 is not a JSON object", name);
    }
    uint64_t data_len = file_size - 8 - hlen;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "__metadata__"))
            continue;
        json_t *dt = json_object_get(v, "dtype");
        json_t *shape = json_object_get(v, "shape");
        json_t *offs = json_object_get(v, "data_offsets");
        if (!json_is_string(dt) || !json_is_array(shape) || !json_is_array(offs) ||
            json_array_size(offs) != 2 || !json_is_integer(json_array_get(offs, 0)) ||
            !json_is_integer(json_array_get(offs, 1))) {
            hbm_err_set(err, "%s: tensor \"%.80s\": needs dtype, shape and two data_offsets",
                        name, key);
            json_decref(root);
            return -1;
        }
        json_int_t b = json_integer_value(json_array_get(offs, 0));
        json_int_t e = json_integer_value(json_array_get(offs, 1));
        if (b < 0 || e < b || (uint64_t)e > data_len) {
            hbm_err_set(err, "%s: tensor \"%.80s\": data_offsets [%lld, %lld] outside the %llu "
                             "data bytes after the header (offset %llu)",
                        name, key, (long long)b, (long long)e, (unsigned long long)data_len,
                        (unsigned long long)(8 + hlen));
            json_decref(root);
            return -1;
        }
        int bits = dtype_bits(json_string_value(dt));
        if (bits) {
            /* the shape must account for the byte range, or the header lies */
            unsigned __int128 n = 1;
            size_t i;
            json_t *d;
            json_array_foreach(shape, i, d) {
                if (!json_is_integer(d) || json_integer_value(d) < 0) {
                    hbm_err_set(err, "%s: tensor \"%.80s\": bad shape", name, key);
                    json_decref(root);
                    return -1;
                }
                n *= (unsigned __int128)json_integer_value(d);
                if (n > ((unsigned __int128)1 << 70))
                    break;
            }
            unsigned __int128 bytes = (n * (unsigned)bits + 7) / 8;
            if (bytes != (unsigned __int128)(e - b)) {
                hbm_err_set(err, "%s: tensor \"%.80s\": %s shape needs %llu bytes but "
                                 "data_offsets span %lld",
                            name, key, json_string_value(dt),
                            (unsigned long long)(bytes > UINT64_MAX ? UINT64_MAX : bytes),
                            (long long)(e - b));
                json_decref(root);
                return -1;
            }
        }
        sum->tensor_bytes += e - b;
        sum->tensors++;
        if (is_embedding(key))
            sum->embed_bytes += e - b;
    }
    json_decref(root);
    return 0;
}

int hbm_plan_safetensors_file(const char *path, hbm_plan_st_sum *sum, hbm_err *err)
{
    int fd = hbm_open_regular(AT_FDCWD, path, 0, 0, err);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return hbm_err_set(err, "%s: %s", path, strerror(errno));
    }
    uint8_t head[8];
    ssize_t r = pread(fd, head, 8, 0);
    if (r != 8) {
        close(fd);
        return hbm_err_set(err, "%s: %lld bytes: too short for a safetensors header (8-byte "
                                "length at offset 0)",
                           path, (long long)st.st_size);
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | head[i];
    uint64_t fsize = (uint64_t)st.st_size;
    /* check the length before allocating anything for it */
    if (hlen > fsize - 8 || hlen > (uint64_t)ST_HEADER_MAX) {
        close(fd);
        return hbm_plan_safetensors_parse(head, 8, fsize, path, sum, err);
    }
    uint8_t *buf = hbm_xmalloc((size_t)hlen + 8);
    memcpy(buf, head, 8);
    size_t got = 0;
    while (got < hlen) {
        r = pread(fd, buf + 8 + got, (size_t)hlen - got, (off_t)(8 + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    int rc = hbm_plan_safetensors_parse(buf, 8 + got, fsize, path, sum, err);
    free(buf);
    return rc;
}

static int add_file(const char *dir, const char *file, hbm_plan_st_sum *total, hbm_err *err)
{
    if (strchr(file, '/') || !strcmp(file, "..")) 
        return hbm_err_set(err, "%s/model.safetensors.index.json: shard name \"%s\" leaves "
                                "the model directory",
                           dir, file);
    char *p = hbm_xasprintf("%s/%s", dir, file);
    hbm_plan_st_sum s;
    int rc = hbm_plan_safetensors_file(p, &s, err);
    free(p);
    if (rc < 0)
        return -1;
    total->tensor_bytes += s.tensor_bytes;
    total->tensors += s.tensors;
    total->embed_bytes += s.embed_bytes;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int plan_weights_in_dir(const char *dir, hbm_plan_st_sum *sum, int *files, hbm_err *err)
{
    memset(sum, 0, sizeof *sum);
    *files = 0;
    char *idx = hbm_xasprintf("%s/model.safetensors.index.json", dir);
    char *text = NULL;
    size_t len = 0;
    if (access(idx, F_OK) == 0) {
        int rc = hbm_read_file(idx, 64 * HBM_MIB, &text, &len, err);
        if (rc < 0) {
            free(idx);
            return -1;
        }
        json_error_t je;
        json_t *root = json_loadb(text, len, 0, &je);
        free(text);
        json_t *map = root ? json_object_get(root, "weight_map") : NULL;
        if (!json_is_object(map)) {
            json_decref(root);
            hbm_err_set(err, "%s:%d: no weight_map object%s%s", idx, root ? 1 : je.line,
                        root ? "" : ": ", root ? "" : je.text);
            free(idx);
            return -1;
        }
        /* unique shard names, in a stable order */
        size_t n = 0, cap = 0;
        char **names = NULL;
        const char *k;
        json_t *v;
        json_object_foreach(map, k, v) {
            const char *f = json_string_value(v);
            if (!f)
                continue;
            bool seen = false;
            for (size_t i = 0; i < n && !seen; i++)
                seen = !strcmp(names[i], f);
            if (seen)
                continue;
            hbm_grow((void **)&names, &cap, n, sizeof *names);
            names[n++] = hbm_xstrdup(f);
        }
        json_decref(root);
        if (n)
            qsort(names, n, sizeof *names, cmp_str);
        int rc2 = 0;
        for (size_t i = 0; i < n && rc2 == 0; i++) {
            rc2 = add_file(dir, names[i], sum, err);
            if (rc2 == 0)
                (*files)++;
        }
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        free(idx);
        return rc2;
    }
    free(idx);
    DIR *d = opendir(dir);
    if (!d)
        return hbm_err_set(err, "%s: %s", dir, strerror(errno));
    struct dirent *e;
    size_t n = 0, cap = 0;
    char **names = NULL;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 12 || strcmp(e->d_name + l - 12, ".safetensors"))
            continue;
        hbm_grow((void **)&names, &cap, n, sizeof *names);
        names[n++] = hbm_xstrdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    /* Mistral ships consolidated.safetensors beside the HF shards: vLLM loads one set */
    bool has_hf = false;
    for (size_t i = 0; i < n; i++)
        has_hf |= strncmp(names[i], "consolidated", 12) != 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (has_hf && !strncmp(names[i], "consolidated", 12))
            continue;
        rc = add_file(dir, names[i], sum, err);
        if (rc == 0)
            (*files)++;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

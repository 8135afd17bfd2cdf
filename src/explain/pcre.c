/* PCRE2, loaded when a catalogue is first read rather than linked, so the commands that
 * never match a pattern (`run` first of all, a container's PID 1) do not map it. The entry
 * points the explain code calls are defined here under the library's own names and forward
 * to it; hbmctl exports no symbol, so the library never binds to these. */
#ifndef HBM_STATIC_BUILD
#include <stdbool.h>
#include <string.h>

#include "explain_int.h"
#include "hbm/libload.h"

static struct {
    bool tried, ok;
    char why[300];
    pcre2_code *(*compile)(PCRE2_SPTR, PCRE2_SIZE, uint32_t, int *, PCRE2_SIZE *,
                           pcre2_compile_context *);
    void (*code_free)(pcre2_code *);
    int (*get_error_message)(int, PCRE2_UCHAR *, PCRE2_SIZE);
    int (*jit_compile)(pcre2_code *, uint32_t);
    int (*pattern_info)(const pcre2_code *, uint32_t, void *);
    int (*match)(const pcre2_code *, PCRE2_SPTR, PCRE2_SIZE, PCRE2_SIZE, uint32_t,
                 pcre2_match_data *, pcre2_match_context *);
    pcre2_match_data *(*match_data_create)(uint32_t, pcre2_general_context *);
    void (*match_data_free)(pcre2_match_data *);
    PCRE2_SIZE *(*get_ovector_pointer)(pcre2_match_data *);
    int (*substring_number_from_name)(const pcre2_code *, PCRE2_SPTR);
    int (*substring_get_byname)(pcre2_match_data *, PCRE2_SPTR, PCRE2_UCHAR **, PCRE2_SIZE *);
    void (*substring_free)(PCRE2_UCHAR *);
} pcre;

static bool load(void)
{
    if (pcre.tried)
        return pcre.ok;
    pcre.tried = true;
    const hbm_dl_sym syms[] = {
        {"pcre2_compile_8", (void **)&pcre.compile},
        {"pcre2_code_free_8", (void **)&pcre.code_free},
        {"pcre2_get_error_message_8", (void **)&pcre.get_error_message},
        {"pcre2_jit_compile_8", (void **)&pcre.jit_compile},
        {"pcre2_pattern_info_8", (void **)&pcre.pattern_info},
        {"pcre2_match_8", (void **)&pcre.match},
        {"pcre2_match_data_create_8", (void **)&pcre.match_data_create},
        {"pcre2_match_data_free_8", (void **)&pcre.match_data_free},
        {"pcre2_get_ovector_pointer_8", (void **)&pcre.get_ovector_pointer},
        {"pcre2_substring_number_from_name_8", (void **)&pcre.substring_number_from_name},
        {"pcre2_substring_get_byname_8", (void **)&pcre.substring_get_byname},
        {"pcre2_substring_free_8", (void **)&pcre.substring_free},
    };
    pcre.ok = hbm_dl_load("HBMCTL_PCRE2_LIB", "libpcre2-8.so.0", "libpcre2-8-0", syms,
                          sizeof syms / sizeof *syms, pcre.why, sizeof pcre.why) != NULL;
    return pcre.ok;
}

int expl_pcre_load(hbm_err *err)
{
    return load() ? 0 : hbm_err_set(err, "%s", pcre.why);
}

/* Every other entry point is reached only with a compiled pattern or match data, which
 * exist only once the library loaded. */
pcre2_code *pcre2_compile(PCRE2_SPTR pattern, PCRE2_SIZE length, uint32_t options,
                          int *errorcode, PCRE2_SIZE *erroroffset, pcre2_compile_context *ccontext)
{
    if (!load()) {
        *errorcode = PCRE2_ERROR_NOMEMORY; /* get_error_message below says why instead */
        *erroroffset = 0;
        return NULL;
    }
    return pcre.compile(pattern, length, options, errorcode, erroroffset, ccontext);
}

int pcre2_get_error_message(int errorcode, PCRE2_UCHAR *buffer, PCRE2_SIZE bufflen)
{
    if (!load()) {
        if (bufflen == 0)
            return PCRE2_ERROR_NOMEMORY;
        size_t n = strnlen(pcre.why, bufflen - 1);
        memcpy(buffer, pcre.why, n);
        buffer[n] = 0;
        return (int)n;
    }
    return pcre.get_error_message(errorcode, buffer, bufflen);
}

pcre2_match_data *pcre2_match_data_create(uint32_t ovecsize, pcre2_general_context *gcontext)
{
    return load() ? pcre.match_data_create(ovecsize, gcontext) : NULL;
}

void pcre2_code_free(pcre2_code *code)
{
    if (code)
        pcre.code_free(code);
}

void pcre2_match_data_free(pcre2_match_data *match_data)
{
    if (match_data)
        pcre.match_data_free(match_data);
}

int pcre2_jit_compile(pcre2_code *code, uint32_t options)
{
    return pcre.jit_compile(code, options);
}

int pcre2_pattern_info(const pcre2_code *code, uint32_t what, void *where)
{
    return pcre.pattern_info(code, what, where);
}

int pcre2_match(const pcre2_code *code, PCRE2_SPTR subject, PCRE2_SIZE length,
                PCRE2_SIZE startoffset, uint32_t options, pcre2_match_data *match_data,
                pcre2_match_context *mcontext)
{
    return pcre.match(code, subject, length, startoffset, options, match_data, mcontext);
}

PCRE2_SIZE *pcre2_get_ovector_pointer(pcre2_match_data *match_data)
{
    return pcre.get_ovector_pointer(match_data);
}

int pcre2_substring_number_from_name(const pcre2_code *code, PCRE2_SPTR name)
{
    return pcre.substring_number_from_name(code, name);
}

int pcre2_substring_get_byname(pcre2_match_data *match_data, PCRE2_SPTR name,
                               PCRE2_UCHAR **bufferptr, PCRE2_SIZE *bufflen)
{
    return pcre.substring_get_byname(match_data, name, bufferptr, bufflen);
}

void pcre2_substring_free(PCRE2_UCHAR *buffer)
{
    if (buffer)
        pcre.substring_free(buffer);
}
#endif

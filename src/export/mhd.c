/* libmicrohttpd, loaded when the exporter starts rather than linked: linked, every hbmctl
 * command (`run` as a container's PID 1 first of all) mapped it and the TLS stack it pulls
 * in, ten shared libraries of the nineteen (issue 28). The entry points server.c calls are
 * defined here under their own names, so the exporter's code reads as plain libmicrohttpd;
 * each forwards to the library's. hbmctl does not export its symbols (no -rdynamic), so
 * the library never binds to these. Every function is reached only after
 * hbm_export_mhd_load succeeded, except the two that start things, which load it. */
#ifdef HBM_HAVE_MHD
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <microhttpd.h>

#include "export/mhd.h"
#include "hbm/libload.h"

static struct {
    bool tried, ok;
    char why[300];
    struct MHD_Daemon *(*start_daemon_va)(unsigned, uint16_t, MHD_AcceptPolicyCallback, void *,
                                          MHD_AccessHandlerCallback, void *, va_list);
    void (*stop_daemon)(struct MHD_Daemon *);
    const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType,
                                                   ...);
    enum MHD_Result (*is_feature_supported)(enum MHD_FEATURE);
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
                                                        enum MHD_ResponseMemoryMode);
    enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
    void (*destroy_response)(struct MHD_Response *);
    enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned, struct MHD_Response *);
    char *(*basic_auth_get_username_password)(struct MHD_Connection *, char **);
    enum MHD_Result (*queue_basic_auth_fail_response)(struct MHD_Connection *, const char *,
                                                      struct MHD_Response *);
    void (*free)(void *);
    const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *,
                                                           enum MHD_ConnectionInfoType, ...);
    enum MHD_Result (*lookup_connection_value_n)(struct MHD_Connection *, enum MHD_ValueKind,
                                                 const char *, size_t, const char **, size_t *);
    void (*suspend_connection)(struct MHD_Connection *);
    void (*resume_connection)(struct MHD_Connection *);
} mhd;

static bool load(void)
{
    if (mhd.tried)
        return mhd.ok;
    mhd.tried = true;
    const hbm_dl_sym syms[] = {
        {"MHD_start_daemon_va", (void **)&mhd.start_daemon_va},
        {"MHD_stop_daemon", (void **)&mhd.stop_daemon},
        {"MHD_get_daemon_info", (void **)&mhd.get_daemon_info},
        {"MHD_is_feature_supported", (void **)&mhd.is_feature_supported},
        {"MHD_create_response_from_buffer", (void **)&mhd.create_response_from_buffer},
        {"MHD_add_response_header", (void **)&mhd.add_response_header},
        {"MHD_destroy_response", (void **)&mhd.destroy_response},
        {"MHD_queue_response", (void **)&mhd.queue_response},
        {"MHD_basic_auth_get_username_password", (void **)&mhd.basic_auth_get_username_password},
        {"MHD_queue_basic_auth_fail_response", (void **)&mhd.queue_basic_auth_fail_response},
        {"MHD_free", (void **)&mhd.free},
        {"MHD_get_connection_info", (void **)&mhd.get_connection_info},
        {"MHD_lookup_connection_value_n", (void **)&mhd.lookup_connection_value_n},
        {"MHD_suspend_connection", (void **)&mhd.suspend_connection},
        {"MHD_resume_connection", (void **)&mhd.resume_connection},
    };
    /* never unloaded: its daemon threads run until the process ends */
    if (!hbm_dl_load("HBMCTL_MHD_LIB", "libmicrohttpd.so.12", "libmicrohttpd12", syms,
                     sizeof syms / sizeof *syms, mhd.why, sizeof mhd.why))
        return false;
    mhd.ok = true;
    return true;
}

int hbm_export_mhd_load(hbm_err *err)
{
    return load() ? 0 : hbm_err_set(err, "%s", mhd.why);
}

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port,
                                    MHD_AcceptPolicyCallback apc, void *apc_cls,
                                    MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
    if (!load())
        return NULL;
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = mhd.start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}

enum MHD_Result MHD_is_feature_supported(enum MHD_FEATURE feature)
{
    return load() ? mhd.is_feature_supported(feature) : MHD_NO;
}

void MHD_stop_daemon(struct MHD_Daemon *daemon)
{
    mhd.stop_daemon(daemon);
}

/* The information types used take no further argument. */
const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
                                                enum MHD_DaemonInfoType info_type, ...)
{
    return mhd.get_daemon_info(daemon, info_type);
}

const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection,
                                                        enum MHD_ConnectionInfoType info_type,
                                                        ...)
{
    return mhd.get_connection_info(connection, info_type);
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
                                                     enum MHD_ResponseMemoryMode mode)
{
    return mhd.create_response_from_buffer(size, buffer, mode);
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *response, const char *header,
                                        const char *content)
{
    return mhd.add_response_header(response, header, content);
}

void MHD_destroy_response(struct MHD_Response *response)
{
    mhd.destroy_response(response);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                   struct MHD_Response *response)
{
    return mhd.queue_response(connection, status_code, response);
}

char *MHD_basic_auth_get_username_password(struct MHD_Connection *connection, char **password)
{
    return mhd.basic_auth_get_username_password(connection, password);
}

enum MHD_Result MHD_queue_basic_auth_fail_response(struct MHD_Connection *connection,
                                                   const char *realm,
                                                   struct MHD_Response *response)
{
    return mhd.queue_basic_auth_fail_response(connection, realm, response);
}

void MHD_free(void *ptr)
{
    mhd.free(ptr);
}

enum MHD_Result MHD_lookup_connection_value_n(struct MHD_Connection *connection,
                                              enum MHD_ValueKind kind, const char *key,
                                              size_t key_size, const char **value_ptr,
                                              size_t *value_size_ptr)
{
    return mhd.lookup_connection_value_n(connection, kind, key, key_size, value_ptr,
                                         value_size_ptr);
}

void MHD_suspend_connection(struct MHD_Connection *connection)
{
    mhd.suspend_connection(connection);
}

void MHD_resume_connection(struct MHD_Connection *connection)
{
    mhd.resume_connection(connection);
}
#endif

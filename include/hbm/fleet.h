/* The fleet view: every node's devices, verdicts, holders (with their pods), leak state and
 * findings, from the hbmctl metrics a Prometheus server already scrapes (docs/fleet.md).
 * Nothing is collected from the nodes themselves: a node Prometheus cannot scrape is listed
 * as stale with what Prometheus last knew of it, never dropped. */
#ifndef HBM_FLEET_H
#define HBM_FLEET_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hbm/err.h"

/* One sample of an instant vector: its labels ("name\0value\0...name\0value\0\0", in
 * the answer's own buffer) and value. */
typedef struct hbm_fleet_prom_sample {
    const char *labels;
    double value;
} hbm_fleet_prom_sample;

typedef struct hbm_fleet_prom_vec {
    hbm_fleet_prom_sample *s; /* owned; the labels belong to the parsed buffer */
    size_t n;
} hbm_fleet_prom_vec;

/* Parses an answer of Prometheus's /api/v1/query holding an instant vector, in place: the
 * label strings are decoded over the buffer's own bytes (no JSON tree is built), so buf must
 * outlive out. Only the labels named in keep (NULL-terminated; NULL: all) are kept; strings
 * nothing uses are only delimited, not checked. An error answer ("status": "error") or
 * anything else than a vector is -1 with a message; what names the query for messages. */
int hbm_fleet_prom_parse(char *buf, size_t len, const char *what, const char *const *keep,
                         hbm_fleet_prom_vec *out, hbm_err *err);
void hbm_fleet_prom_vec_free(hbm_fleet_prom_vec *v);
/* A label's value, "" when absent. */
const char *hbm_fleet_prom_label(const hbm_fleet_prom_sample *s, const char *name);

typedef struct hbm_fleet_proc {
    int64_t pid;
    char name[64];
    int64_t memory_bytes;
    char ns[64], pod[256], container[64]; /* pod[0] == '\0': not in a pod */
    int leak;                             /* 1, 0, -1 unknown */
} hbm_fleet_proc;

typedef struct hbm_fleet_dev {
    char index[32]; /* the exporter's device label (logic id on Ascend, index on NVIDIA) */
    char name[64];
    char verdict[16]; /* "" unknown */
    int64_t memory_used_bytes, memory_total_bytes; /* HBM_UNKNOWN */
    int leak;                                      /* 1, 0, -1 unknown */
    hbm_fleet_proc *procs;
    size_t nprocs;
} hbm_fleet_dev;

typedef struct hbm_fleet_finding {
    char id[64];
    char severity[16];
    char device[32]; /* "" for a host finding */
    int64_t count;
} hbm_fleet_finding;

typedef struct hbm_fleet_node {
    char instance[256];
    char job[128];
    char hostname[128];  /* "" unknown */
    bool hostname_shared; /* another node has the same hostname */
    bool stale;          /* its last scrape failed */
    char target_pod[256]; /* the target's own pod label: never a holder's pod */
    hbm_fleet_dev *devs;
    size_t ndevs;
    hbm_fleet_finding *findings;
    size_t nfindings;
    double last_remediation; /* unix time of its last clean-up action (audit log); 0 none */
} hbm_fleet_node;

typedef struct hbm_fleet {
    char prometheus[512]; /* the server's URL, credentials left out */
    double at;            /* evaluation time, unix seconds */
    hbm_fleet_node *nodes;
    size_t nnodes;
    struct hbm_fleet_index *index; /* while building: nodes, devices, processes by key */
    size_t lookups, probes; /* index lookups while building, and the slots they visited */
} hbm_fleet;

/* The queries, in the order hbm_fleet_build takes their answers. */
enum {
    HBM_FQ_UP,       /* the scrape targets of jobs that export hbmctl metrics */
    HBM_FQ_SOURCE,   /* hostnames, also of stale nodes (their last hour) */
    HBM_FQ_VERDICT,
    HBM_FQ_USED,
    HBM_FQ_TOTAL,
    HBM_FQ_DEV_LEAK,
    HBM_FQ_PROC_MEM,
    HBM_FQ_PROC_LEAK,
    HBM_FQ_FINDINGS,
    HBM_FQ_REMEDY,   /* the last remediation's time, per node */
    HBM_FQ_COUNT
};
/* The PromQL of query q narrowed by selector (label matchers without braces, "" none). */
void hbm_fleet_query(int q, const char *selector, char *buf, size_t n);
/* The labels the view takes from query q's answer (NULL-terminated). */
const char *const *hbm_fleet_labels(int q);

typedef struct hbm_fleet_opts {
    const char *url;          /* Prometheus base URL */
    const char *selector;     /* label matchers, e.g. pool="a100"; NULL none */
    const char *bearer_token; /* NULL none */
    const char *username, *password;
    const char *ca_file;
    double timeout_s; /* for all queries together */
} hbm_fleet_opts;

/* One instant query of Prometheus at base (its URL) at time at, answered by the monotonic
 * time deadline, keeping the labels named in keep. *body (owned) holds the labels of out;
 * free it after out. */
int hbm_fleet_prom_query(const hbm_fleet_opts *o, const char *base, const char *promql,
                         const char *const *keep, double at, double deadline,
                         hbm_fleet_prom_vec *out, char **body, hbm_err *err);
/* Runs every query, one answer in memory at a time, and builds the view; the opts' timeout
 * bounds them all together. -1 when Prometheus cannot be reached in time, an answer cannot
 * be read, or no node matches. */
int hbm_fleet_fetch(const hbm_fleet_opts *o, hbm_fleet *out, hbm_err *err);
/* Builds the view from the answers of the HBM_FQ_* queries (ans[HBM_FQ_COUNT]). */
void hbm_fleet_build(hbm_fleet *f, const hbm_fleet_prom_vec *ans);
/* The same one answer at a time: hbm_fleet_add for each query in HBM_FQ_* order (the
 * nodes come from HBM_FQ_UP), then hbm_fleet_finish, which sorts. Each step costs time
 * linear in its samples. */
void hbm_fleet_add(hbm_fleet *f, int q, const hbm_fleet_prom_vec *v);
void hbm_fleet_finish(hbm_fleet *f);
void hbm_fleet_free(hbm_fleet *f);

/* Reads a secret (a bearer token or a password) from a file: a regular file opened without
 * blocking, at most 64 KiB, one trailing newline cut. Any control byte left (CR, LF, NUL,
 * ESC, ...) is refused: it would forge HTTP headers; so is a space in a token. */
int hbm_fleet_read_secret(const char *path, bool token, char **out, hbm_err *err);
/* A secret hbm_fleet_read_secret gave, overwritten before it is freed; NULL is none. */
void hbm_fleet_secret_free(char *secret);
/* A basic auth user name as RFC 7617 section 2 allows it: no ':' (it ends the user-id) and
 * no control character. */
bool hbm_fleet_user_ok(const char *user);
/* The URL with any userinfo replaced by "***", for messages. */
void hbm_fleet_redact_url(const char *url, char *buf, size_t n);

/* The name a node is shown by: its hostname, unless another node has it too or it is
 * unknown, then its instance. */
const char *hbm_fleet_node_name(const hbm_fleet_node *n);
/* Nodes whose last scrape failed. */
size_t hbm_fleet_stale(const hbm_fleet *f);
/* Severity rank of a node, worst first in the view: UNHEALTHY 5, ORPHANED 4, stale 3,
 * UNACCOUNTED 2, BUSY 1, FREE 0. */
int hbm_fleet_node_rank(const hbm_fleet_node *n);
/* True when a device is ORPHANED, UNACCOUNTED or UNHEALTHY, a finding is critical, or a
 * node is stale: what makes `hbmctl fleet` exit 1. */
bool hbm_fleet_dirty(const hbm_fleet *f);
/* One node of the --json document's "nodes" (docs/fleet.md): the document is written a
 * node at a time, so its size in memory is one node's, not the fleet's. */
json_t *hbm_fleet_node_json(const hbm_fleet_node *n);

#endif

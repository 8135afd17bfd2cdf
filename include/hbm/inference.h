/* Inference servers among the host's processes: which process is a server (vLLM, SGLang,
 * MindIE, ...), the outermost one of a tree, its arguments and the port it serves on. Judged
 * once here; doctor's server rules and the observation's progress samples read them. */
#ifndef HBM_INFERENCE_H
#define HBM_INFERENCE_H

#include <stdbool.h>

#include "hbm/obs.h"

/* True for an inference server's process (its command line names vllm, sglang, mindie,
 * lmdeploy, text-generation-launcher, or a VLLM:: title) that is not a zombie. */
bool hbm_inference_server(const hbm_hproc *p);
/* True when p's parent is a server too: the outermost server of a tree stands for it. */
bool hbm_inference_parent_is_server(const hbm_obs *obs, const hbm_hproc *p);
/* The positive integer value of option a (or b) in a space-joined command line
 * ("--port 8000", "--port=8000"), else dflt. */
long hbm_cmdline_arg_long(const char *cmd, const char *a, const char *b, long dflt);
/* True when pid is root or one of its descendants among the recorded processes. */
bool hbm_obs_in_tree(const hbm_obs *obs, int root, int pid);
/* The port a server serves on: --port, else its engine's default (vLLM 8000, SGLang
 * 30000); -1 when neither. */
long hbm_inference_port(const hbm_hproc *p);

#endif

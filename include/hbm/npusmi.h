/* Reader for the text of `npu-smi info` and its sub-commands, as users paste them.
 * Layout-driven: the header rows say which columns exist and where; the reader never
 * assumes a sample it has seen. Errors name the line: "FILE:LINE: what". */
#ifndef HBM_NPUSMI_H
#define HBM_NPUSMI_H

#include <stddef.h>

#include "hbm/err.h"
#include "hbm/obs.h"

/* npu-smi prints at most this many process rows per chip (MAX_CHIP_PROCESS_NUM). */
#define HBM_NPUSMI_MAX_PROCS_PER_CHIP 8

/* Parses `npu-smi info` text into obs (devices, processes; obs->partial for fragments).
 * name is used in error messages. Text that holds no npu-smi table at all is an error. */
int hbm_npusmi_parse_info(hbm_obs *obs, const char *text, size_t len, const char *name,
                          hbm_err *err);

/* `npu-smi info -t topo`: fills obs->topo for the devices already in obs, matched by
 * position of NPU<n> labels; devices not yet in obs are ignored. */
int hbm_npusmi_parse_topo(hbm_obs *obs, const char *text, size_t len, const char *name,
                          hbm_err *err);

/* `npu-smi info -m`: the mapping NPU ID / Chip ID / Chip Logic ID; fills logic_id (and
 * the chip name where missing) of devices in obs matched by (index, chip). */
int hbm_npusmi_parse_map(hbm_obs *obs, const char *text, size_t len, const char *name,
                         hbm_err *err);

#endif

/* --health-url: one HTTP GET with a hard time bound; 2xx is healthy. */
#include "hbm/http.h"
#include "run_int.h"

int run_health_get(const char *url, double timeout_s, hbm_err *err)
{
    hbm_http_result res;
    if (hbm_http_get(url, timeout_s < 0.1 ? 0.1 : timeout_s, "hbmctl-run/" HBM_VERSION, &res,
                     err) < 0)
        return -1;
    if (res.status < 200 || res.status > 299)
        return hbm_err_set(err, "%s: HTTP %ld", url, res.status);
    return 0;
}

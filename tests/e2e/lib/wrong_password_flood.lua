-- wrk script: every request carries basic auth for a known user (env FLOOD_USER) with a
-- password never sent before, so no cache can answer it: each costs the server a bcrypt.
-- Used by tests/e2e/exporter_auth.sh and bench/exporter.
local user = os.getenv("FLOOD_USER") or "prometheus"
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local n = 0

local function base64(s)
  local out = {}
  for i = 1, #s, 3 do
    local a, b, c = s:byte(i, i + 2)
    local w = a * 65536 + (b or 0) * 256 + (c or 0)
    local idx = {math.floor(w / 262144) % 64, math.floor(w / 4096) % 64,
                 math.floor(w / 64) % 64, w % 64}
    out[#out + 1] = alphabet:sub(idx[1] + 1, idx[1] + 1) .. alphabet:sub(idx[2] + 1, idx[2] + 1) ..
      (b and alphabet:sub(idx[3] + 1, idx[3] + 1) or "=") ..
      (c and alphabet:sub(idx[4] + 1, idx[4] + 1) or "=")
  end
  return table.concat(out)
end

function setup(thread)
  thread:set("seed", math.random(1, 1e9))
end

function init(args)
  math.randomseed(seed or os.time())
end

function request()
  n = n + 1
  local cred = user .. ":wrong-" .. n .. "-" .. math.random(1, 1e9)
  return wrk.format("GET", "/metrics", {["Authorization"] = "Basic " .. base64(cred)})
end

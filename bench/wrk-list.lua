-- wrk request script of the load benchmarks (scripts/bench-load.sh, scripts/bench-native.sh,
-- scripts/bench-gateway.sh): one JSON-RPC request body per line of the file $BODIES, picked at
-- random (tools/list with random filters, or tools/call; each body's "id" is replaced by a fresh
-- one per request, so no two requests in flight share an id), with the headers of the era:
--   $SESSIONS (comma-separated Mcp-Session-Ids, or $SESSION for one): the 2025-11-25 era; thread
--     k of $THREADS (default 2, as `wrk -t2`) takes every THREADS-th session starting at k and
--     cycles through them request by request, so with as many sessions as connections each
--     session has about one request in flight, like one client per connection;
--   neither: the stateless 2026-07-28 era (the version travels in each body's _meta, and in the
--     MCP-Protocol-Version header; Mcp-Method is the body's method, and a tools/call or
--     prompts/get also carries its params.name as Mcp-Name).
-- Prints one JSON line at the end: requests, requests/s, mean/p50/p99 latency in ms, errors
-- (socket errors, timeouts and HTTP statuses >= 400) and mean bytes read per response (headers
-- included).
local bodies = {} -- { prefix, suffix, headers }: the body around its id's digits; its own
-- header table in the 2026-07-28 era
local n = 0
local headers = {} -- one header table per session of this thread
local turn = 0
local counter = 0
local stride = 1
local created = 0

function setup(thread)
  -- Runs in the main Lua state, once per thread before its init: numbers the threads.
  thread:set("thread_index", created)
  created = created + 1
end

function init(args)
  local tid = thread_index or 0
  local nthreads = tonumber(os.getenv("THREADS") or "2")
  for line in io.lines(os.getenv("BODIES")) do
    local a, b = line:find('"id":%d+')
    if a then
      n = n + 1
      bodies[n] = { line:sub(1, a + 4), line:sub(b + 1) }
    end
  end
  assert(n > 0, "no body with an \"id\" in $BODIES")
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  local list = os.getenv("SESSIONS") or os.getenv("SESSION") or ""
  local all = {}
  for s in list:gmatch("[^,]+") do all[#all + 1] = s end
  if #all > 0 then
    wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
    -- wrk.format uses a header table given to it instead of wrk.headers: one full table each.
    for i, s in ipairs(all) do
      if #all < nthreads or (i - 1) % nthreads == tid % nthreads then
        local h = {}
        for k, v in pairs(wrk.headers) do h[k] = v end
        h["Mcp-Session-Id"] = s
        headers[#headers + 1] = h
      end
    end
  else
    wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
    for _, b in ipairs(bodies) do
      local line = b[1] .. "0" .. b[2]
      local method = line:match('"method":"([^"]+)"') or "tools/list"
      local h = {}
      for k, v in pairs(wrk.headers) do h[k] = v end
      h["Mcp-Method"] = method
      if method == "tools/call" or method == "prompts/get" then
        h["Mcp-Name"] = line:match('"params":{.-"name":"([^"]+)"')
      end
      b[3] = h
    end
  end
  -- Ids unique across threads: thread k sends k+1, k+1+THREADS, ...
  counter = tid + 1
  stride = nthreads
  math.randomseed(os.time() * 7919 + tid * 104729 + math.floor(os.clock() * 1e6))
end

function request()
  local b = bodies[math.random(n)]
  local body = b[1] .. counter .. b[2]
  counter = counter + stride
  if #headers > 0 then
    turn = turn % #headers + 1
    return wrk.format(nil, nil, headers[turn], body)
  end
  return wrk.format(nil, nil, b[3], body)
end

function done(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout
  io.write(string.format(
    '{"requests": %d, "rps": %.1f, "mean": %.3f, "p50": %.3f, "p99": %.3f, "errors": %d, "bytes": %.0f}\n',
    summary.requests, summary.requests / (summary.duration / 1e6), latency.mean / 1000,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors,
    summary.requests > 0 and summary.bytes / summary.requests or 0))
end

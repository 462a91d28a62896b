-- wrk request script: tools/list with random filters (one JSON body per line of $BODIES),
-- with the headers of the era: $SESSION (2025-11-25, a session opened beforehand) or none
-- (2026-07-28, stateless: the version travels in each body's _meta).
-- Prints one JSON line at the end: requests/s, p50 and p99 in ms, errors.
local bodies = {}
local n = 0

function init(args)
  for line in io.lines(os.getenv("BODIES")) do
    n = n + 1
    bodies[n] = line
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  local session = os.getenv("SESSION") or ""
  if session ~= "" then
    wrk.headers["Mcp-Session-Id"] = session
    wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
  else
    wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
    wrk.headers["Mcp-Method"] = "tools/list"
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end

function request()
  return wrk.format(nil, nil, nil, bodies[math.random(n)])
end

function done(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout
  io.write(string.format('{"requests": %d, "rps": %.1f, "p50": %.3f, "p99": %.3f, "errors": %d}\n',
    summary.requests, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors))
end

-- The requests of make bench, for wrk (cmd/bench runs it).
--
--   wrk ... -s bench.lua URL -- get FILE OFFSET
--       GET /<code> for each line of FILE in turn, from OFFSET on, each
--       thread from its own place in the list.
--   wrk ... -s bench.lua URL -- create KEY PREFIX
--       POST /api/v1/links with X-Api-Key KEY, a new URL each time.
--
-- At the end it prints one line, "BENCH {json}", that cmd/bench reads.

local threads = {}

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local mode, codes, n, i, key, prefix

function init(args)
  mode = args[1]
  i = 0
  if mode == "get" then
    codes, n = {}, 0
    for line in io.lines(args[2]) do
      n = n + 1
      codes[n] = line
    end
    i = (tonumber(args[3]) + tid * 7919) % n
  elseif mode == "create" then
    key, prefix = args[2], args[3] .. "/" .. tid .. "/"
  else
    error("bench.lua: unknown mode " .. tostring(mode))
  end
end

function request()
  i = i + 1
  if mode == "get" then
    if i > n then i = 1 end
    return wrk.format("GET", "/" .. codes[i])
  end
  return wrk.format("POST", "/api/v1/links",
    {["Content-Type"] = "application/json", ["X-Api-Key"] = key},
    '{"url":"https://example.com/' .. prefix .. i .. '"}')
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end

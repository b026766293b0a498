-- wrk script of the benchmark (bench/load.ts runs it, one thread): every request is `POST /plants` with a new plant
-- id, the bearer token of BENCH_TOKEN and a JSON body; every response is checked against the expected Plant; at the
-- end one line `bench-result {...}` (JSON): counts, latency in µs, wrk's CPU time in s.
-- Arguments after `--`: <id prefix> <first offset> <expected body>. An id is the prefix's digits and a 12-digit
-- offset: Lua's numbers are exact only below 2^53, and the ids are above it.

local threads = {}
function setup(thread) table.insert(threads, thread) end

function init(args)
  prefix, offset, expected = args[1], tonumber(args[2]), args[3]
  statuses, wrong = {}, 0
  headers = { ["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN"), ["Content-Type"] = "application/json" }
end

function request()
  local id = prefix .. string.format("%012d", offset)
  offset = offset + 1
  return wrk.format("POST", "/plants", headers, '{"id":' .. id .. ',' .. string.sub(expected, 2))
end

function response(status, headers, body)
  local key = tostring(status)
  statuses[key] = (statuses[key] or 0) + 1
  if status >= 200 and status < 300 and body ~= expected then wrong = wrong + 1 end
end

-- done runs in wrk's main state: the thread's counts are read from it.
function done(summary, latency, requests)
  local parts = {}
  for status, count in pairs(threads[1]:get("statuses")) do table.insert(parts, string.format('"%s":%d', status, count)) end
  local e = summary.errors
  io.write(string.format('bench-result {"durationUs":%d,"requests":%d,"statuses":{%s},"wrongBodies":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d},"latencyUs":{"p50":%d,"p99":%d,"max":%d},"cpuS":%.3f}\n',
    summary.duration, summary.requests, table.concat(parts, ","), threads[1]:get("wrong"),
    e.connect, e.read, e.write, e.timeout, latency:percentile(50), latency:percentile(99), latency.max, os.clock()))
end

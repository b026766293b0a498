-- wrk script of the benchmark (bench/load.ts runs it): every request is
-- `POST /plants` with a new plant id, a valid bearer token and a JSON body; every
-- response is checked against the expected Plant; at the end one line
-- `bench-result {...}` (JSON) goes to stdout: counts, latency in µs, and wrk's own
-- CPU time in seconds (`os.clock()`, all threads).
--
-- Arguments after `--`: <id prefix> <first offset> <offsets per thread> <expected body>.
-- A plant id is the prefix's digits followed by a 12-digit offset: wrk's Lua
-- numbers are doubles, exact only below 2^53, and the ids are above it. Thread i
-- (from 0) sends offsets first + i * perThread, first + i * perThread + 1, …
-- Token: environment variable BENCH_TOKEN (an argument would show in `ps`).
-- With BENCH_PROGRESS set, each thread also prints `progress <n>` after every
-- 100th response (n: its responses so far).

local threads = {}

function setup(thread)
  thread:set("index", #threads)
  table.insert(threads, thread)
end

function init(args)
  prefix = args[1]
  offset = tonumber(args[2]) + index * tonumber(args[3])
  limit = offset + tonumber(args[3])
  expected = args[4]
  statuses = {}
  wrong = 0
  answered = 0
  progress = os.getenv("BENCH_PROGRESS") ~= nil
  headers = {
    ["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN"),
    ["Content-Type"] = "application/json",
  }
end

function request()
  if offset >= limit then error("ran out of plant ids") end
  local body = '{"id":' .. prefix .. string.format("%012d", offset) .. ',"name":"Monstera deliciosa","tag":"indoor"}'
  offset = offset + 1
  return wrk.format("POST", "/plants", headers, body)
end

function response(status, headers, body)
  local key = tostring(status)
  statuses[key] = (statuses[key] or 0) + 1
  if status >= 200 and status < 300 and body ~= expected then wrong = wrong + 1 end
  answered = answered + 1
  if progress and answered % 100 == 0 then
    io.write("progress " .. answered .. "\n")
    io.flush()
  end
end

function done(summary, latency, requests)
  local all, wrongBodies = {}, 0
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do all[status] = (all[status] or 0) + count end
    wrongBodies = wrongBodies + thread:get("wrong")
  end
  local parts = {}
  for status, count in pairs(all) do table.insert(parts, string.format('"%s":%d', status, count)) end
  local e = summary.errors
  io.write(string.format(
    'bench-result {"durationUs":%d,"requests":%d,"statuses":{%s},"wrongBodies":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d},' ..
    '"latencyUs":{"p50":%d,"p99":%d,"max":%d,"mean":%.1f},"cpuS":%.3f}\n',
    summary.duration, summary.requests, table.concat(parts, ","), wrongBodies,
    e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, latency.mean, os.clock()))
end

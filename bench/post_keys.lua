-- wrk script: like post.lua, and every request carries an Idempotency-Key of
-- its own, so that every answer is a first create (201) whose key is stored.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local counter = 0

request = function()
  counter = counter + 1
  -- wrk.format uses the headers it is given instead of wrk.headers (where
  -- -H put Authorization): pass them all.
  local headers = {}
  for k, v in pairs(wrk.headers) do headers[k] = v end
  headers["Idempotency-Key"] = '"bench-' .. counter .. '"'
  return wrk.format(nil, nil, headers, '{"name":"category-' .. counter .. '"}')
end

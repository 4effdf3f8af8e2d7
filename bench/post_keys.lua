-- wrk script: like post.lua, and every request carries an Idempotency-Key of
-- its own, so that every answer is a first create (201) whose key is stored.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local counter = 0

request = function()
  counter = counter + 1
  return wrk.format(nil, nil, { ["Idempotency-Key"] = '"bench-' .. counter .. '"' },
    '{"name":"category-' .. counter .. '"}')
end

-- wrk script: every request creates a category whose name no earlier request
-- of this run used (the server is fresh for each run), so every answer is 201.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local counter = 0

request = function()
  counter = counter + 1
  return wrk.format(nil, nil, nil, '{"name":"category-' .. counter .. '"}')
end

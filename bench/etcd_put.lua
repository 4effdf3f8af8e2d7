-- wrk script: etcd's own rate for single-key puts through its JSON gateway,
-- every request a new key (/bench/put/<n>), as petstore's creates are.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local counter = 0
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

-- standard base64, as the gateway wants keys and values
local function b64(s)
  return ((s:gsub(".", function(c)
    local bits, byte = "", c:byte()
    for i = 8, 1, -1 do bits = bits .. (byte % 2 ^ i - byte % 2 ^ (i - 1) > 0 and "1" or "0") end
    return bits
  end) .. "0000"):gsub("%d%d%d?%d?%d?%d?", function(x)
    if #x < 6 then return "" end
    local c = 0
    for i = 1, 6 do c = c + (x:sub(i, i) == "1" and 2 ^ (6 - i) or 0) end
    return alphabet:sub(c + 1, c + 1)
  end) .. ({ "", "==", "=" })[#s % 3 + 1])
end

request = function()
  counter = counter + 1
  local value = '{"id":' .. counter .. ',"name":"category-' .. counter .. '"}'
  return wrk.format(nil, nil, nil, '{"key":"' .. b64("/bench/put/" .. counter) .. '","value":"' .. b64(value) .. '"}')
end

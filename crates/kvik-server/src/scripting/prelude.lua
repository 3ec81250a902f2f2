-- Runs once in every new Lua state, with the full standard library still in reach,
-- and returns what the Rust side needs. It builds the sandbox scripts see: every
-- global and library table read-only, reading a missing global an error, `pcall`
-- turning error tables into their text, and the Lua half of the `redis` table.
local G, c_functions, no_metatable = ...
-- Lua implementations of `redis` members, registered by name for the C trampolines
-- the engine installs in their place (see sandbox.rs).
local impl = {}
local getinfo = debug.getinfo
local type, tostring, error, select = type, tostring, error, select
local rawget, rawset, setmetatable, getmetatable = rawget, rawset, setmetatable, getmetatable
local raw_pcall = pcall

-- Filled by the engine while a library loads: `loading` (set) and `registered` (what
-- its code registered).
local bridge = { loading = false }

local readonly = setmetatable({}, { __mode = 'k' })

local function deny_write()
  error('Attempt to modify a readonly table', 2)
end

-- Lua 5.1 has no read-only tables: a protected table is an empty proxy that reads
-- through to it, remembered here with its contents. What getmetatable shows of it is
-- `shown`, or nothing (`no_metatable`, which the engine's getmetatable turns into
-- nil): the proxy's own metatable is never handed out.
local function protect(t, shown)
  local proxy = setmetatable({}, {
    __index = t, __newindex = deny_write, __metatable = shown or no_metatable,
  })
  readonly[proxy] = t
  return proxy
end

local function missing_global(name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 3)
end

-- A read-only view of `t` in which a missing name is an error. The view reads
-- through to `t`, and only `t`'s own metatable (which scripts cannot reach) reports
-- a miss, so reading a name that exists costs no function call.
local function strict(t, shown)
  setmetatable(t, { __index = function(_, k) missing_global(k) end })
  return protect(t, shown)
end

G.rawset = function(t, k, v)
  if readonly[t] then error('Attempt to modify a readonly table', 0) end
  return rawset(t, k, v)
end
G.setmetatable = function(t, mt)
  if readonly[t] then error('Attempt to modify a readonly table', 0) end
  return setmetatable(t, mt)
end

-- What iterates or reads a table's own contents looks through a proxy, as it would
-- on Redis's read-only tables (`pairs(cjson)` lists cjson's functions). The locals
-- keep the names argument errors report ("bad argument #1 to 'pairs'"); the calls
-- are not tail calls, which would lose them.
local function contents(t)
  local target = readonly[t]
  if type(target) == 'table' then return target end
  return t
end
-- The iterators they return go through the view too: the table behind a view is
-- never handed to a script (which could then write to it).
do
  local pairs, next, ipairs, rawget = pairs, next, ipairs, rawget
  local function view_next(t, k) local nk, v = next(contents(t), k) return nk, v end
  local function view_inext(t, i)
    i = i + 1
    local v = rawget(contents(t), i)
    if v ~= nil then return i, v end
  end
  G.next = view_next
  G.pairs = function(t)
    local f, s, c = pairs(contents(t))
    if s ~= t then return view_next, t, c end
    return f, s, c
  end
  G.ipairs = function(t)
    local f, s, c = ipairs(contents(t))
    if s ~= t then return view_inext, t, c end
    return f, s, c
  end
  G.rawget = function(t, k) local v = rawget(contents(t), k) return v end
end

local function pcall_result(ok, ...)
  if ok then return ok, ... end
  local e = ...
  if type(e) == 'table' then
    local text = rawget(e, 'err')
    if type(text) == 'string' or type(text) == 'number' then e = text end
  end
  return false, e
end
G.pcall = function(...) return pcall_result(raw_pcall(...)) end

-- Where an uncaught error happened, and its text as an error table, for the
-- "... script: <name>, on @user_script:<line>." reply.
local function error_handler(err)
  -- The function that raised it, past the C functions (error, redis.call) and the
  -- sandbox's own Lua helpers in between.
  local level = 2
  local info = getinfo(level, 'nSl')
  while info and (info.what == 'C' or info.source == '=kvik') do
    level = level + 1
    info = getinfo(level, 'nSl')
  end
  if type(err) ~= 'table' then
    err = { err = 'ERR ' .. tostring(err) }
  end
  if info then
    err.source = info.source
    err.line = info.currentline
  end
  return err
end

local redis = G.redis

redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3

function redis.replicate_commands() return true end
function redis.breakpoint() return false end
function redis.debug() end

redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
local write_log = redis.log
function impl.log(...)
  local n = select('#', ...)
  if n < 2 then error('redis.log() requires two arguments or more.', 0) end
  local level = ...
  if type(level) ~= 'number' or level < 0 or level > 3 then error('Invalid debug level.', 0) end
  local parts = { select(2, ...) }
  for i = 1, n - 1 do
    local p = parts[i]
    parts[i] = (type(p) == 'string' or type(p) == 'number') and tostring(p) or ''
  end
  write_log(level, table.concat(parts, ' ', 1, n - 1))
end

local digest = redis.sha1hex
function impl.sha1hex(...)
  if select('#', ...) ~= 1 then error('wrong number of arguments', 0) end
  local s = ...
  return digest(tostring(s))
end

local function wrong_args() return { err = 'ERR wrong number or type of arguments' } end
function redis.status_reply(s)
  if type(s) ~= 'string' then return wrong_args() end
  return { ok = s }
end
local error_text = redis.error_reply
function redis.error_reply(s)
  if type(s) ~= 'string' then return wrong_args() end
  return { err = error_text(s) }
end

-- FUNCTION LOAD: a library's code runs with only these in `redis`.
local known_flags = {
  ['no-writes'] = true, ['allow-oom'] = true, ['allow-stale'] = true,
  ['no-cluster'] = true, ['allow-cross-slot-keys'] = true,
}
local function is_string(v) return type(v) == 'string' or type(v) == 'number' end

local function register_function(...)
  local name, callback, flags, description
  local n = select('#', ...)
  if n == 1 then
    local spec = ...
    if type(spec) ~= 'table' then
      error('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).', 0)
    end
    for k, v in G.pairs(spec) do
      if k == 'function_name' then name = v
      elseif k == 'callback' then callback = v
      elseif k == 'flags' then flags = v
      elseif k == 'description' then description = v
      else error('unknown argument given to redis.register_function', 0) end
    end
    if name == nil then error('redis.register_function must get a function name argument', 0) end
    if callback == nil then error('redis.register_function must get a callback argument', 0) end
    if not is_string(name) then error('function_name argument given to redis.register_function must be a string', 0) end
    if type(callback) ~= 'function' then error('callback argument given to redis.register_function must be a function', 0) end
    if description ~= nil and not is_string(description) then
      error('description argument given to redis.register_function must be a string', 0)
    end
  elseif n == 2 then
    name, callback = ...
    if not is_string(name) then error('first argument to redis.register_function must be a string', 0) end
    if type(callback) ~= 'function' then error('second argument to redis.register_function must be a function', 0) end
  else
    error('wrong number of arguments to redis.register_function', 0)
  end
  name = tostring(name)
  local names = {}
  if flags ~= nil then
    if type(flags) ~= 'table' then
      error('flags argument to redis.register_function must be a table representing function flags', 0)
    end
    for _, f in G.ipairs(flags) do
      if type(f) ~= 'string' or not known_flags[f] then error('unknown flag given', 0) end
      names[#names + 1] = f
    end
  end
  if not name:match('^[%w_]+$') then
    error('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long', 0)
  end
  local registered = bridge.registered
  if registered[name] then error('Function already exists in the library', 0) end
  registered[name] = true
  registered[#registered + 1] = {
    name = name, callback = callback, flags = names,
    description = description ~= nil and tostring(description) or nil,
  }
end

for name, c_function in G.pairs(c_functions) do redis[name] = c_function end

local loader_redis = {
  register_function = register_function,
  log = c_functions.log,
  REDIS_VERSION = redis.REDIS_VERSION,
  REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
}

-- Every library table read-only; `debug` leaves the globals (Redis has none).
G.debug = nil
for k, v in G.next, G do
  if type(v) == 'table' and k ~= '_G' then rawset(G, k, protect(v)) end
end
G.redis = protect(redis)
-- KeyDB's scripts call it `keydb` (keydb.call, keydb.pcall, ...): the same table.
G.keydb = G.redis
-- getmetatable shows what Redis's globals have: a read-only table holding only
-- `__index`, the C function that reports a missing global (luaProtectedTableError,
-- which takes exactly the two arguments of a metamethod).
local globals = strict(G, protect({
  __index = function(...)
    if select('#', ...) ~= 2 then
      error('Wrong number of arguments to luaProtectedTableError', 2)
    end
    missing_global(select(2, ...))
  end,
}))
rawset(G, '_G', globals)

-- Strings share one metatable, which scripts reach with getmetatable(''): it reads
-- through to the read-only string table, and what getmetatable returns for a string
-- (its __metatable) is a read-only view of it, so no script can change what string
-- methods do for the next one.
local string_meta = getmetatable('')
string_meta.__index = G.string
string_meta.__metatable = protect(string_meta)

-- While a library loads, its code sees only a restricted `redis`; its functions,
-- when they run, see the globals scripts see, less KEYS and ARGV (they get theirs as
-- arguments).
local loading_globals = { redis = strict(loader_redis) }
local not_for_functions = { KEYS = true, ARGV = true }
local library_globals = setmetatable({}, {
  __index = function(_, k)
    local v
    if bridge.loading then
      v = loading_globals[k]
    elseif not not_for_functions[k] then
      v = rawget(G, k)
    end
    if v == nil then missing_global(k) end
    return v
  end,
  __newindex = deny_write,
  __metatable = false,
})
readonly[library_globals] = true

return {
  error_handler = error_handler, bridge = bridge, globals = globals,
  library_globals = library_globals, impl = impl,
}

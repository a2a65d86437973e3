package main

// The help texts of bridge and its commands.

const usage = `bridge — lets MCP hosts hand work to DeepSeek.

Usage:
  bridge serve [--env FILE]       run the HTTP daemon: POST http://HOST:PORT/mcp/<MCP_PATH_SECRET>
  bridge stdio [--env FILE]       every tool over stdin/stdout, for hosts that launch a command: forwards
                                  to the daemon's unix socket, starting the daemon when none runs
  bridge approval-prompt --config FILE
                                  the permission-prompt child Claude Code starts for agent jobs
  bridge version                  print the version
  bridge help [COMMAND]           this text, or a command's

Configuration comes from the environment and a .env file (--env FILE, else
BRIDGE_ENV_FILE, else the per-user $XDG_CONFIG_HOME/deepseek-mcp-bridge/.env —
~/.config/deepseek-mcp-bridge/.env on Linux); real environment variables win. A
file named by --env or BRIDGE_ENV_FILE must exist (` + "`bridgectl secret`" + ` creates
it); the per-user one is optional. A ./.env in the working directory is read
only when named (` + "`bridgectl doctor --move-env`" + ` moves it to the per-user place). Every variable is listed with its default in .env.example. Run
` + "`bridge help serve`" + ` for the daemon's.
`

// commandHelp is `bridge help TOPIC`; "" is `bridge help`.
var commandHelp = map[string]string{
	"":                usage,
	"serve":           serveHelp,
	"stdio":           stdioUsage,
	"approval-prompt": approvalHelp,
	"version":         "Usage: bridge version\n\nPrints the bridge's version.\n",
}

const serveHelp = `Usage: bridge serve [--env FILE]

Runs the HTTP daemon until SIGINT or SIGTERM (in-flight calls get 10 s to finish).

  POST http://HOST:PORT/mcp/<MCP_PATH_SECRET>   the MCP endpoint (Streamable HTTP, stateless)
  GET  http://HOST:PORT/health                  {"status":"ok","version":…}
  <BRIDGE_STATE_DIR>/daemon.sock                the same endpoint (POST /mcp, GET /health) over a
                                                unix socket, mode 0600: no secret (bridge stdio)

Anything else, and a wrong secret, is 404. Once listening it writes
<BRIDGE_STATE_DIR>/daemon.json (pid, address, socket, the .env it read) and
removes it on a clean stop.

Agent jobs reach DeepSeek through the model proxy, on its own loopback port
(daemon.json: harness.model_proxy). It alone holds DEEPSEEK_API_KEY; each job
gets a token that dies with the job, and BRIDGE_JOB_MAX_COST_USD,
BRIDGE_JOB_MAX_TOKENS and BRIDGE_DAILY_MAX_COST_USD cap what jobs spend.

Required:
  MCP_PATH_SECRET   at least 16 characters (bridgectl secret, or openssl rand -hex 32)
Usually set:
  DEEPSEEK_API_KEY  without it the server starts, deepseek_flash answers with an error
                    and agent jobs are refused
  HOST, PORT        listen address (default 127.0.0.1:8787; PORT=0 picks a free port)
  RATE_LIMIT_PER_MINUTE, DEEPSEEK_MODEL, DEEPSEEK_TIMEOUT_MS, DEEPSEEK_MAX_OUTPUT_TOKENS
Logging:
  BRIDGE_LOG_FILE   JSON lines to this file; otherwise stderr (console format on a terminal)
  BRIDGE_LOG_LEVEL  debug | info | warn | error
The path secret and the API key never appear in the log.

Flags:
  --env FILE   read this .env file (default: BRIDGE_ENV_FILE, then the per-user one)
`

const approvalHelp = `Usage: bridge approval-prompt --config FILE

The permission-prompt MCP server Claude Code starts for each agent job. It
decides nothing: it forwards each tool call to the daemon's approval service
(the loopback URL and the job's token are in FILE, which the daemon writes)
and hands back the daemon's answer; when the daemon cannot be reached the
call is denied. It is not run by hand.
`

const stdioUsage = `Usage: bridge stdio [--env FILE]

Every tool of the bridge over stdin/stdout (newline-delimited JSON-RPC), for
MCP hosts that launch a server as a command:

  claude mcp add deepseek -- /path/to/bin/bridge stdio

(` + "`bridgectl register claude|codex|cursor`" + ` prints the exact line for your install.)

It forwards each message to the daemon of the state dir over its unix socket
(<BRIDGE_STATE_DIR>/daemon.sock; no path secret: the file's mode 0600 is the
credential), so agent jobs belong to the daemon: they outlive the host's
session and are approved with bridgectl as usual. When no daemon answers, it
starts one itself as ` + "`bridgectl start`" + ` does (this binary, ` + "`bridge serve`" + `), says so
on stderr, and forwards; the daemon keeps running afterwards (` + "`bridgectl stop`" + `
ends it). Progress notifications reach the host; a host's cancel ends its
call in the daemon. Logs go to BRIDGE_LOG_FILE or stderr, never stdout.

Flags:
  --env FILE   read this .env file (default: BRIDGE_ENV_FILE, then the per-user one)
`

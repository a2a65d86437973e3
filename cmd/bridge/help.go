package main

// The help texts of bridge and its commands.

const usage = `bridge — lets MCP hosts hand work to DeepSeek.

Usage:
  bridge serve [--env FILE]       run the HTTP daemon: POST http://HOST:PORT/mcp/<MCP_PATH_SECRET>
  bridge stdio [--env FILE]       serve deepseek_flash and deepseek_models over stdin/stdout (for hosts that launch a
                                  command); the agent tools need the daemon (bridge serve)
  bridge approval-prompt --config FILE
                                  the permission-prompt child Claude Code starts for agent jobs
  bridge version                  print the version
  bridge help [COMMAND]           this text, or a command's

Configuration comes from the environment and a .env file (--env FILE, else
BRIDGE_ENV_FILE, else ./.env); real environment variables win. A file named by
--env or BRIDGE_ENV_FILE must exist (` + "`bridgectl secret`" + ` creates it); ./.env is
optional. Every variable is listed with its default in .env.example. Run
` + "`bridge help serve`" + ` for the daemon's.
`

var commandHelp = map[string]string{
	"serve":           serveHelp,
	"stdio":           stdioUsage,
	"approval-prompt": approvalHelp,
	"version":         "Usage: bridge version\n\nPrints the bridge's version.\n",
}

const serveHelp = `Usage: bridge serve [--env FILE]

Runs the HTTP daemon until SIGINT or SIGTERM (in-flight calls get 10 s to finish).

  POST http://HOST:PORT/mcp/<MCP_PATH_SECRET>   the MCP endpoint (Streamable HTTP, stateless)
  GET  http://HOST:PORT/health                  {"status":"ok","version":…}

Anything else, and a wrong secret, is 404. Once listening it writes
<BRIDGE_STATE_DIR>/daemon.json (pid, address) and removes it on a clean stop.

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
  --env FILE   read this .env file (default: BRIDGE_ENV_FILE, then ./.env)
`

const approvalHelp = `Usage: bridge approval-prompt --config FILE

The permission-prompt MCP server Claude Code starts for each agent job. It is
not run by hand.
`

const stdioUsage = `Usage: bridge stdio [--env FILE]

Serves deepseek_flash over stdin/stdout (newline-delimited JSON-RPC), for MCP
hosts that launch a server as a command, e.g.

  claude mcp add deepseek -- bridge stdio --env /path/to/.env

Only deepseek_flash: the agent tools (deepseek_agent_start, _poll, _cancel)
need the daemon, which owns the one job registry of a state dir — register
bridge serve's URL for those. No path secret is needed. Logs go to
BRIDGE_LOG_FILE or stderr, never stdout.
`

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
)

var registerCmd = &Command{
	Name:  "register",
	Usage: "register claude|codex|cursor [--url] [--name NAME] [--show]",
	Short: "print the exact command or config block that registers the bridge with a host",
	Long: `Prints what to paste, with nothing left to fill in. The default is the
command form: the host launches ` + "`bridge stdio`" + ` (this install's absolute path),
which forwards to the daemon over its unix socket and starts the daemon when
none runs — every tool, no secret in the host's config. The .env is named
with --env unless it is the per-user one.

  claude   a ` + "`claude mcp add --scope user NAME -- BRIDGE stdio`" + ` command line
  codex    a [mcp_servers.NAME] block for ~/.codex/config.toml
  cursor   a block for ~/.cursor/mcp.json (or .cursor/mcp.json in a project)

--url prints the URL form instead (http://HOST:PORT/mcp/SECRET of the running
daemon, masked unless --show: the URL is a credential). --name sets the
server's name (default deepseek).`,
	Run: runRegister,
}

// registerHosts are the hosts register knows, in the order --help lists them.
var registerHosts = []string{"claude", "codex", "cursor"}

func runRegister(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, true)
	asURL := f.Bool("url", false, "the URL form (the daemon's HTTP endpoint with the secret) instead of the command form")
	name := f.String("name", "deepseek", "the server's name in the host")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || !slices.Contains(registerHosts, pos[0]) {
		return usageError{fmt.Sprintf("register needs one host: %s (see `bridgectl register --help`)", strings.Join(registerHosts, ", "))}
	}
	if !validServerName(*name) {
		return usageError{fmt.Sprintf("register --name %q: use letters, digits, - and _ only", *name)}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	host := pos[0]
	if *asURL {
		if err := c.cfg.CheckSecret(); err != nil {
			return err
		}
		d := c.daemon(ctx)
		if daemonctl.PortOf(d.Addr) == 0 {
			return errors.New("the port is not known yet: PORT=0 picks it at start — `bridgectl start` first, or register the command form (without --url)")
		}
		fmt.Fprint(e.Stdout, registerURL(host, *name, localEndpoint(d.Addr, c.cfg.PathSecret)))
		if f.show == nil || !*f.show {
			// A masked URL pasted into a host registers a broken one.
			fmt.Fprintln(e.Stderr, "The URL's secret is masked above, so that line is not ready to paste: add --show to print it in full.")
		}
		return nil
	}
	bin, err := findBridge(e)
	if err != nil {
		return err
	}
	if abs, err := filepath.Abs(bin); err == nil {
		bin = abs
	}
	argv := []string{"stdio"}
	if c.cfg.EnvFile != "" && !config.SameFile(c.cfg.EnvFile, config.DefaultEnvFile(e.Getenv)) {
		argv = append(argv, "--env", c.cfg.EnvFile)
	}
	fmt.Fprint(e.Stdout, registerCommand(host, *name, bin, argv))
	return nil
}

// registerCommand is the command form for host.
func registerCommand(host, name, bin string, argv []string) string {
	switch host {
	case "claude":
		words := []string{"claude", "mcp", "add", "--scope", "user", name, "--", shellQuote(bin)}
		for _, a := range argv {
			words = append(words, shellQuote(a))
		}
		return strings.Join(words, " ") + "\n"
	case "codex":
		return fmt.Sprintf("[mcp_servers.%s]\ncommand = %s\nargs = %s\n", name, tomlString(bin), tomlArray(argv))
	default: // cursor
		return jsonBlock(name, map[string]any{"command": bin, "args": argv})
	}
}

// registerURL is the URL form for host.
func registerURL(host, name, url string) string {
	switch host {
	case "claude":
		return fmt.Sprintf("claude mcp add --scope user --transport http %s %s\n", name, shellQuote(url))
	case "codex":
		return fmt.Sprintf("[mcp_servers.%s]\nurl = %s\n", name, tomlString(url))
	default:
		return jsonBlock(name, map[string]any{"url": url})
	}
}

func jsonBlock(name string, server map[string]any) string {
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{name: server}}, "", "  ")
	return string(b) + "\n"
}

// tomlString is a TOML basic string; JSON's escapes are TOML's for these
// (paths and URLs: no control characters).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func tomlArray(l []string) string {
	parts := make([]string, len(l))
	for i, s := range l {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func validServerName(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == ""
}

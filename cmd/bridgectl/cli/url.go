package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
)

var urlCmd = &Command{
	Name:  "url",
	Usage: "url [--show] [--bare]",
	Short: "print the local and public MCP endpoints (masked unless --show)",
	Long:  `The local endpoint is http://ADDR/mcp/SECRET on the daemon's address; the public one is the tunnel's URL with the same path. The SECRET is the one in .env: when .env changed after the daemon started, a note says so (the daemon still answers the old secret until ` + "`bridgectl reload`" + `). --show prints the secret in full — it is a credential: anyone with the URL can spend your DeepSeek balance. --bare prints the local URL alone on one line, for scripts (` + "`claude mcp add --transport http deepseek \"$(bridgectl url --bare --show)\"`" + `); it fails when the port is not known yet (PORT=0 and no daemon running).`,
	Run:   runURL,
}

func runURL(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, true)
	bare := f.Bool("bare", false, "print the local URL alone (for scripts)")
	if _, err := f.parse(args); err != nil {
		return err
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	if err := c.cfg.CheckSecret(); err != nil {
		return err
	}
	d := c.daemon(ctx)
	if *bare {
		if daemonctl.PortOf(d.Addr) == 0 {
			return errors.New("the port is not known yet: PORT=0 picks it at start — `bridgectl start` first")
		}
		fmt.Fprintln(e.Stdout, localEndpoint(d.Addr, c.cfg.PathSecret))
		return nil
	}
	note := ""
	if !d.Healthy {
		note = "   (daemon not running)"
	}
	fmt.Fprintf(e.Stdout, "local:  %s%s\n", localEndpoint(d.Addr, c.cfg.PathSecret), note)
	changed := c.envChanged(d)
	if t := c.tunnel(); t.PID != 0 && t.Info != nil {
		fmt.Fprintf(e.Stdout, "public: %s\n", t.Info.URL+"/mcp/"+c.cfg.PathSecret)
	} else {
		fmt.Fprintln(e.Stdout, "public: none (`bridgectl tunnel`)")
	}
	if changed {
		// The URLs above carry the secret in .env; the daemon answers the old one.
		fmt.Fprintf(e.Stdout, "note:   %s; until then these URLs get 404\n", envChangedNote(c.envPath))
	}
	return nil
}

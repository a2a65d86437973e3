package cli

import (
	"context"
	"fmt"
)

var untunnelCmd = &Command{
	Name:  "untunnel",
	Usage: "untunnel",
	Short: "stop the tunnel; the daemon keeps running",
	Long:  `Stops cloudflared (SIGTERM, then SIGKILL after 10 s) and removes tunnel.pid and tunnel.json. A named tunnel's token stays in <state>/tunnel.token (` + "`bridgectl uninstall --purge`" + ` removes it).`,
	Run:   runUntunnel,
}

func runUntunnel(ctx context.Context, e *Env, args []string) error {
	c, err := parseAndLoad(e, args, false)
	if err != nil {
		return err
	}
	t, err := c.stopTunnel(ctx)
	if err != nil {
		return err
	}
	if t.StaleNote != "" {
		fmt.Fprintf(e.Stdout, "note: %s; its record is removed\n", t.StaleNote)
	}
	if t.PID == 0 {
		fmt.Fprintln(e.Stdout, "no tunnel was running")
		return nil
	}
	fmt.Fprintf(e.Stdout, "tunnel stopped (pid %d)\n", t.PID)
	return nil
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/daemonctl"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
	"golang.org/x/term"
)

// maxTokenBytes bounds what is read from stdin as a tunnel token.
const maxTokenBytes = 16 << 10

var hostnameRE = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,63}$`)

func runTunnelNamed(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, true)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: cloudflared tunnel token NAME | bridgectl tunnel named HOSTNAME"}
	}
	host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(pos[0], "https://"), "http://"), "/")
	if !hostnameRE.MatchString(host) {
		return usageError{fmt.Sprintf("tunnel named: %q is not a hostname (want e.g. bridge.example.com)", pos[0])}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	var tok []byte
	if isTerminal(e.Stdin) {
		// Typed or pasted on a terminal the token would stay in its scrollback,
		// and reading would wait for an EOF nobody knows to type: take it only
		// from a pipe or a file, and otherwise reuse the stored one.
		if _, err := os.Stat(c.dir.TunnelTokenFile()); err != nil {
			return errors.New("no tunnel token stored, and stdin is a terminal (a typed token would stay in its scrollback): pipe it in with `cloudflared tunnel token NAME | bridgectl tunnel named HOST`, or `bridgectl tunnel named HOST < FILE`")
		}
	} else if tok, err = io.ReadAll(io.LimitReader(e.Stdin, maxTokenBytes+1)); err != nil {
		return fmt.Errorf("read the token from stdin: %w", err)
	}
	token := strings.TrimSpace(string(tok))
	switch {
	case len(tok) > maxTokenBytes:
		return errors.New("the token on stdin is longer than 16 KiB: pipe only the token (`cloudflared tunnel token NAME`)")
	case strings.ContainsAny(token, " \t\r\n"):
		return errors.New("stdin held more than one word: pipe only the token (`cloudflared tunnel token NAME | bridgectl tunnel named HOST`)")
	case token != "":
		e.mask.add(token)
		if err := c.createDir(); err != nil {
			return err
		}
		if err := statedir.WriteFileAtomic(c.dir.TunnelTokenFile(), []byte(token+"\n")); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "token stored in %s (mode 0600)\n", c.dir.TunnelTokenFile())
	default:
		if _, err := os.Stat(c.dir.TunnelTokenFile()); err != nil {
			return errors.New("no token on stdin and none stored: run `cloudflared tunnel token NAME | bridgectl tunnel named HOST` (or paste the token from the Cloudflare dashboard into stdin)")
		}
	}
	st, err := c.tunnelPrecheck(ctx)
	if err != nil {
		return err
	}
	ti, err := c.startNamedTunnel(ctx, st, host)
	if err != nil {
		return err
	}
	c.printTunnel(ti)
	fmt.Fprintf(e.Stdout, "make sure the hostname's public route points at %s (deploy/README.md)\n", ti.Origin)
	return nil
}

func (c *ctl) startNamedTunnel(ctx context.Context, st daemonctl.Status, host string) (*statedir.TunnelInfo, error) {
	if _, err := os.Stat(c.dir.TunnelTokenFile()); err != nil {
		return nil, errors.New("no tunnel token stored: run `cloudflared tunnel token NAME | bridgectl tunnel named HOST`")
	}
	args := []string{"tunnel", "--no-autoupdate", "run", "--token-file", c.dir.TunnelTokenFile()}
	ti := &statedir.TunnelInfo{Kind: "named", Hostname: host, URL: "https://" + host, Origin: "http://" + st.Addr}
	return c.runTunnelProcess(ctx, args, ti, false)
}

// isTerminal reports whether r is a terminal; /dev/null and other character
// devices are not.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Package cli is bridgectl: the terminal commands that start, stop, rotate,
// tunnel and inspect a bridge daemon through its state directory and .env file.
//
// One file per subcommand; this file is the shared framework: the command
// table, dispatch, flag parsing and .env discovery; mask.go keeps secrets out
// of the output. A new command is one new file defining a command value plus
// one line in commands().
package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/config"
	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// Command is one bridgectl subcommand.
type Command struct {
	Name  string // as typed: "start", "job kill" is "job"
	Usage string // one line: "start [--foreground]"
	Short string // one line for the command list
	Long  string // the rest of --help
	// Run does the work. args excludes the command name.
	Run func(ctx context.Context, e *Env, args []string) error
}

// commands is the command table, in the order `bridgectl help` lists them.
// Adding a command: one file with a Command value, one line here.
func commands() []*Command {
	return []*Command{
		startCmd, stopCmd, restartCmd, reloadCmd, statusCmd, logsCmd,
		enableCmd, disableCmd, uninstallCmd,
		secretCmd, rotateCmd, urlCmd, registerCmd, allowCmd,
		jobsCmd, jobCmd,
		pendingCmd, approveCmd, denyCmd, auditCmd, approvalCmd,
		tunnelCmd, untunnelCmd,
		setupCmd, smokeCmd, acceptCmd, doctorCmd, versionCmd,
	}
}

// Env is what a command runs against. Main fills it from the process; tests
// build their own.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer // masked unless --show
	Stderr io.Writer // masked always
	// Environ is the process environment (KEY=VALUE). Config is read from it,
	// and child processes inherit it.
	Environ []string
	// Exe is bridgectl's own executable (to find `bridge` next to it).
	Exe string
	// HTTP is used for loopback probes and the public tunnel check.
	HTTP *http.Client
	// Now is the clock.
	Now func() time.Time

	// EnvFile is the --env given before the subcommand ("" = discover).
	EnvFile string

	cmd *Command // the command being run (set by dispatch)

	mask *masker
}

// NewEnv builds an Env around raw streams; every output goes through the masker.
func NewEnv(stdin io.Reader, stdout, stderr io.Writer, environ []string) *Env {
	m := &masker{}
	exe, _ := os.Executable()
	return &Env{
		Stdin:   stdin,
		Stdout:  &maskWriter{m: m, w: stdout, showable: true},
		Stderr:  &maskWriter{m: m, w: stderr},
		Environ: environ,
		Exe:     exe,
		HTTP:    &http.Client{Timeout: 10 * time.Second},
		Now:     time.Now,
		mask:    m,
	}
}

// Getenv reads one variable of e.Environ.
func (e *Env) Getenv(name string) (string, bool) {
	for i := len(e.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(e.Environ[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// Flush writes any buffered partial line.
func (e *Env) Flush() {
	for _, w := range []io.Writer{e.Stdout, e.Stderr} {
		if mw, ok := w.(*maskWriter); ok {
			mw.Flush()
		}
	}
}

// Main runs bridgectl with args (without the program name) and returns the exit code.
func Main(ctx context.Context, e *Env, args []string) int {
	defer e.Flush()
	err := dispatch(ctx, e, args)
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.Stderr, "bridgectl: %v\n", err)
		return 2
	}
	var se silentError
	if errors.As(err, &se) {
		return 1
	}
	var ce codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	fmt.Fprintf(e.Stderr, "bridgectl: %v\n", err)
	return 1
}

func dispatch(ctx context.Context, e *Env, args []string) error {
	// Global flags before the command: --env FILE, --help.
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		switch {
		case a == "-h" || a == "--help" || a == "-help":
			printHelp(e.Stdout)
			return nil
		case a == "--version" || a == "-version":
			fmt.Fprintf(e.Stdout, "bridgectl %s\n", Version)
			return nil
		case a == "--env" || a == "-env":
			if len(args) < 2 {
				return usageError{"--env needs a FILE"}
			}
			e.EnvFile, args = args[1], args[2:]
		case strings.HasPrefix(a, "--env=") || strings.HasPrefix(a, "-env="):
			_, e.EnvFile, _ = strings.Cut(a, "=")
			args = args[1:]
		default:
			return usageError{fmt.Sprintf("unknown flag %s before the command; see `bridgectl help`", a)}
		}
	}
	if len(args) == 0 {
		printHelp(e.Stderr)
		return usageError{"no command given"}
	}
	name := args[0]
	if name == "help" {
		if len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				printCommandHelp(e.Stdout, c)
				return nil
			}
		}
		printHelp(e.Stdout)
		return nil
	}
	c := lookup(name)
	if c == nil {
		return usageError{fmt.Sprintf("unknown command %q; run `bridgectl help` for the list", name)}
	}
	e.cmd = c
	return c.Run(ctx, e, args[1:])
}

func lookup(name string) *Command {
	for _, c := range commands() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "bridgectl — run, rotate, tunnel and watch the DeepSeek MCP bridge")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: bridgectl [--env FILE] COMMAND [flags]    (bridgectl --version, --help)")
	fmt.Fprintln(w)
	cmds := commands()
	width := 0
	for _, c := range cmds {
		width = max(width, len(commandName(c)))
	}
	for _, c := range cmds {
		head := fmt.Sprintf("  %-*s  ", width, commandName(c))
		fill(w, head, strings.Repeat(" ", len(head)), helpWords(c.Short, helpWidth-len(head)))
	}
	fmt.Fprintln(w)
	printLong(w, `.env discovery: --env FILE, then BRIDGE_ENV_FILE, then the running daemon's file, then the per-user `+
		`$XDG_CONFIG_HOME/deepseek-mcp-bridge/.env (~/.config/deepseek-mcp-bridge/.env); real environment variables win. `+
		`Every command acts on the running daemon's file from any directory, and says so when that is not the one `+
		"it would have picked. A ./.env is read only when named (`bridgectl doctor --move-env` moves it). "+
		"A file named by --env or BRIDGE_ENV_FILE must exist (`bridgectl secret` creates it); the per-user one is optional.\n\n"+
		"Secrets (path secret, API key, tunnel token, credentials in a URL) are masked in every output unless --show is given. "+
		"`bridgectl COMMAND --help` explains one command, with its flags.")
}

func printCommandHelp(w io.Writer, c *Command) {
	printUsage(w, c.Usage)
	fmt.Fprintln(w)
	printLong(w, c.Short)
	if c.Long != "" {
		fmt.Fprintln(w)
		printLong(w, strings.TrimSpace(c.Long))
	}
}

// usageError is a mistake on the command line (exit 2).
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// silentError is a failure already reported on the output (exit 1, nothing more printed).
type silentError struct{ msg string }

func (s silentError) Error() string { return s.msg }

// codeError is an outcome already reported on the output that has its own
// exit status (documented in the command's --help).
type codeError struct {
	code int
	msg  string
}

func (c codeError) Error() string { return c.msg }

// flags is a command's flag set with the flags every command shares.
type flags struct {
	*flag.FlagSet
	cmd  *Command
	e    *Env
	env  string
	show *bool
	// quiet: the notes about which .env is read were said already (a re-read).
	quiet bool
}

// newFlags starts the running command's flag set. withShow adds --show.
func newFlags(e *Env, withShow bool) *flags {
	c := e.cmd
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &flags{FlagSet: fs, cmd: c, e: e}
	fs.StringVar(&f.env, "env", "", "the .env file (default: BRIDGE_ENV_FILE, then the running daemon's, then the per-user one)")
	if withShow {
		f.show = fs.Bool("show", false, "print secrets in full")
	}
	return f
}

// parse parses args, allowing flags after positional arguments. --help prints
// the command's help and returns flag.ErrHelp.
func (f *flags) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := f.FlagSet.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.help()
				return nil, flag.ErrHelp
			}
			return nil, usageError{fmt.Sprintf("%s: %v (see `bridgectl %s --help`)", f.cmd.Name, err, f.cmd.Name)}
		}
		rest := f.FlagSet.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			pos = append(pos, rest[1:]...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if f.env == "" {
		f.env = f.e.EnvFile
	}
	if f.show != nil && *f.show {
		f.e.mask.setShow(true)
	}
	return pos, nil
}

func (f *flags) help() {
	w := f.e.Stdout
	printCommandHelp(w, f.cmd)
	var b bytes.Buffer
	printFlags(&b, f.FlagSet)
	if b.Len() > 0 {
		fmt.Fprintf(w, "\nflags:\n%s", b.String())
	}
}

// ctl is what most commands work with: the loaded config, the state dir and the env file path.
type ctl struct {
	e       *Env
	cfg     config.Config
	dir     statedir.Dir
	envPath string // the .env file to edit (absolute; may not exist yet)
	pick    envPick
	// startedFor names who asked for a start (start --for), in the log's marker.
	startedFor string
}

// load reads the config the way the daemon does and registers its secrets
// with the masker. It does not create the state dir: most commands only look,
// and on a machine where the bridge never ran they must leave nothing behind.
// A command that writes there calls c.createDir first.
func (f *flags) load() (*ctl, error) { return f.loadWith(config.LoadFrom) }

// loadCreatingEnv is load for the commands that create the .env file
// (secret, rotate, allow): a named .env file that does not exist yet is fine.
func (f *flags) loadCreatingEnv() (*ctl, error) { return f.loadWith(config.LoadMissingOK) }

func (f *flags) loadWith(loadConfig func(string, config.Lookup) (config.Config, error)) (*ctl, error) {
	e := f.e
	cfg, pick, err := f.pickEnv(loadConfig)
	if err != nil {
		if !errors.Is(err, config.ErrNoEnvFile) { // that one says how to create the file
			// A bad value: say where it may come from. A .env that cannot be
			// read at all (its directory is missing) is named by err already.
			if _, serr := os.Stat(config.ResolveEnvFile(f.env, e.Getenv)); serr == nil {
				err = fmt.Errorf("%w (fix the value in %s or the environment)", err, config.ResolveEnvFile(f.env, e.Getenv))
			}
		}
		if pick.daemonPID != 0 {
			err = fmt.Errorf("%w; the running daemon (pid %d) is untouched", err, pick.daemonPID)
		}
		return nil, err
	}
	e.mask.add(cfg.Secrets()...)
	dir, err := statedir.At(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	if tok, err := os.ReadFile(dir.TunnelTokenFile()); err == nil {
		e.mask.add(strings.TrimSpace(string(tok)))
	}
	envPath := cfg.EnvFile
	if envPath == "" {
		envPath = config.ResolveEnvFile(f.env, e.Getenv)
	}
	if abs, err := filepath.Abs(envPath); err == nil {
		envPath = abs
	}
	if cfg.IgnoredLocalEnv != "" && !f.quiet {
		fmt.Fprintf(e.Stderr, "note: %s\n", config.LocalEnvNote(cfg.IgnoredLocalEnv, envPath))
	}
	return &ctl{e: e, cfg: cfg, dir: dir, envPath: envPath, pick: pick}, nil
}

// createDir creates the state dir (mode 0700) for a command that writes
// into it: start, tunnel, disable, approval off.
func (c *ctl) createDir() error {
	d, err := statedir.Open(c.dir.Root)
	if err != nil {
		return err
	}
	c.dir = d
	return nil
}

// noStateDir says, for a command that found nothing to show, that the state
// dir does not exist ("" when it does): the bridge never ran with it.
func (c *ctl) noStateDir() string {
	if c.dir.Exists() {
		return ""
	}
	return fmt.Sprintf("no state dir at %s (the bridge has not run with it; `bridgectl start` creates it)", c.dir.Root)
}

// parseAndLoad starts a command with no flags of its own, only the shared
// --env (and --show when withShow): it parses args (positional arguments are
// ignored) and loads the config.
func parseAndLoad(e *Env, args []string, withShow bool) (*ctl, error) {
	f := newFlags(e, withShow)
	if _, err := f.parse(args); err != nil {
		return nil, err
	}
	return f.load()
}

// parseAndLoadCreatingEnv is parseAndLoad for a command that creates the .env file.
func parseAndLoadCreatingEnv(e *Env, args []string, withShow bool) (*ctl, error) {
	f := newFlags(e, withShow)
	if _, err := f.parse(args); err != nil {
		return nil, err
	}
	return f.loadCreatingEnv()
}

// lines returns the lines of b (without newlines).
func lines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// clipboardTimeout bounds one clipboard tool's run (a var: the tests, which
// run their fake tools on loaded machines, give it longer).
var clipboardTimeout = 5 * time.Second

// copyToClipboard hands text to the first clipboard tool that fits the
// session (wl-copy on Wayland, xclip on X11, pbcopy, clip.exe) and returns its
// name. A tool that is there but fails is skipped for the next one; when none
// worked, the error names each tool that failed and how.
func copyToClipboard(ctx context.Context, e *Env, text string) (string, error) {
	type tool struct {
		name string
		args []string
		ok   bool
	}
	_, wayland := e.Getenv("WAYLAND_DISPLAY")
	_, x11 := e.Getenv("DISPLAY")
	tools := []tool{
		{"wl-copy", nil, wayland},
		{"xclip", []string{"-selection", "clipboard"}, x11},
		{"pbcopy", nil, true},
		{"clip.exe", nil, true},
		{"clip", nil, runtime.GOOS == "windows"},
	}
	var failed []string
	for _, t := range tools {
		if !t.ok {
			continue
		}
		bin, err := lookPath(e, t.name)
		if err != nil {
			continue
		}
		if err := runClipboardTool(ctx, e, bin, t.args, text); err != nil {
			failed = append(failed, fmt.Sprintf("%s failed (%v)", t.name, err))
			continue
		}
		return t.name, nil
	}
	if len(failed) > 0 {
		return "", errors.New(strings.Join(failed, "; "))
	}
	return "", errNoClipboard
}

// errNoClipboard: no clipboard tool is there.
var errNoClipboard = errors.New("no clipboard tool found (wl-copy, xclip, pbcopy, clip.exe)")

// headless: no display to hold a clipboard (neither Wayland nor X11).
func headless(e *Env) bool {
	_, wayland := e.Getenv("WAYLAND_DISPLAY")
	_, x11 := e.Getenv("DISPLAY")
	return !wayland && !x11
}

// runClipboardTool runs one tool with text on stdin; the error is its exit
// status and the first line of its output. The output goes to an unlinked
// temp file, not a pipe: wl-copy and xclip leave a child behind that holds the
// clipboard and inherits stdout and stderr, and a pipe would keep Run waiting
// for that child.
func runClipboardTool(ctx context.Context, e *Env, bin string, args []string, text string) error {
	ctx, cancel := context.WithTimeout(ctx, clipboardTimeout)
	defer cancel()
	errFile, err := os.CreateTemp("", "bridgectl-clipboard-*.stderr")
	if err != nil {
		return fmt.Errorf("could not capture its stderr: %w", err)
	}
	defer errFile.Close()
	os.Remove(errFile.Name())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(text)
	cmd.Stdout = errFile
	cmd.Stderr = errFile
	cmd.Env = e.Environ
	runErr := cmd.Run()
	if runErr == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("no answer within %v", clipboardTimeout)
	}
	why := runErr.Error() // "exit status 1", or why it could not start
	if first := firstLine(errFile, 200); first != "" {
		why += ": " + first
	}
	return errors.New(why)
}

// firstLine reads the first non-empty line of f from its start, at most limit bytes of it.
func firstLine(f *os.File, limit int) string {
	b, _ := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return truncate(l, limit)
		}
	}
	return ""
}

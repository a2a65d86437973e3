package cli

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// copyToClipboard hands text to the first clipboard tool that fits the
// session (wl-copy on Wayland, xclip on X11, pbcopy, clip.exe) and returns its name.
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
	for _, t := range tools {
		if !t.ok {
			continue
		}
		bin, err := lookPath(e, t.name)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cmd := exec.CommandContext(ctx, bin, t.args...)
		cmd.Stdin = strings.NewReader(text)
		cmd.Env = e.Environ
		err = cmd.Run()
		cancel()
		if err == nil {
			return t.name, nil
		}
	}
	return "", errors.New("no clipboard tool found (wl-copy, xclip, pbcopy, clip.exe)")
}

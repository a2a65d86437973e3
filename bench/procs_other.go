//go:build !unix

package bench

import "os/exec"

// ownGroup: no process groups here; the bench itself needs Linux's /proc
// anyway, this only keeps `GOOS=windows go build ./...` working.
func ownGroup(*exec.Cmd) {}

// signalGroup kills the process (there is no gentler signal to send).
func signalGroup(cmd *exec.Cmd, _ bool) { _ = cmd.Process.Kill() }

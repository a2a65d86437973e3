//go:build !unix

package demo

import "os/exec"

// Without process groups the demo stops the child itself; the bridge stops
// its own children on shutdown.
func setGroup(*exec.Cmd) {}

func terminate(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

func kill(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

func groupAlive(*exec.Cmd) bool { return false }

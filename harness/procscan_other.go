//go:build !linux

package harness

// JobProcesses needs /proc; elsewhere it finds nothing.
func JobProcesses(string) []int { return nil }

// KillJobProcesses needs /proc; elsewhere it kills nothing.
func KillJobProcesses(string) int { return 0 }

// killJobDescendants is KillJobProcesses: the end of a job outside Linux.
func killJobDescendants(jobID string) int { return KillJobProcesses(jobID) }

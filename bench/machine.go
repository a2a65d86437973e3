package bench

import (
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine says where a run happened.
type Machine struct {
	CPUs      int    // runtime.NumCPU (nproc)
	CPUModel  string // /proc/cpuinfo "model name"
	GoVersion string // the toolchain that built the bench (make bench builds everything with one)
	Kernel    string
	LoadAvg   string // /proc/loadavg at the start: other work on the machine skews the figures
	Date      string
}

// ReadMachine reads the machine's description.
func ReadMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Date: time.Now().UTC().Format("2006-01-02 15:04 UTC")}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.LoadAvg = LoadAvg()
	return m
}

// LoadAvg is the first three fields of /proc/loadavg.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

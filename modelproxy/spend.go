package modelproxy

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/deepseek-mcp-bridge/deepseek-mcp-bridge/statedir"
)

// dayLedger is the spend of all jobs on one UTC day. It is kept in the state
// dir as spend-YYYY-MM-DD.json so BRIDGE_DAILY_MAX_COST_USD survives a daemon
// restart.
type dayLedger struct {
	Version int    `json:"version"`
	Day     string `json:"day"` // YYYY-MM-DD, UTC
	Usage   Usage  `json:"usage"`
}

func dayOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// spendFile is where the ledger of day lives; "" when there is no state dir.
func spendFile(dir statedir.Dir, day string) string {
	if dir.Root == "" {
		return ""
	}
	return dir.SpendFile(day)
}

// loadLedger reads the ledger of day; a missing file is a fresh day.
func loadLedger(dir statedir.Dir, day string) (dayLedger, error) {
	l := dayLedger{Version: statedir.FormatVersion, Day: day}
	path := spendFile(dir, day)
	if path == "" {
		return l, nil
	}
	var onDisk dayLedger
	err := statedir.ReadJSON(path, &onDisk)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return l, nil
	case err != nil:
		return l, fmt.Errorf("read daily spend: %w", err)
	case onDisk.Day != day:
		return l, fmt.Errorf("read daily spend: %s holds day %q", path, onDisk.Day)
	}
	onDisk.Version = statedir.FormatVersion
	return onDisk, nil
}

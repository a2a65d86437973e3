package modelproxy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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

	// unknown, when set, says why the day's earlier spend is not known (its
	// file was unreadable); never written.
	unknown string
}

// openDay is the ledger of day. An unreadable file is handled the same way at
// start and at the midnight rollover: logged as an error, moved aside to
// <file>.unreadable (so it is kept and not overwritten), and the day starts
// from a conservative state — with BRIDGE_DAILY_MAX_COST_USD set, the day's
// spend is unknown, so every model call is refused until the next UTC day
// (the ceiling cannot be enforced); without a daily ceiling there is nothing
// to enforce and the day counts from zero.
func (p *Proxy) openDay(day string) dayLedger {
	l, err := loadLedger(p.opts.StateDir, day)
	if err == nil {
		return l
	}
	path := spendFile(p.opts.StateDir, day)
	aside := path + ".unreadable"
	if rerr := os.Rename(path, aside); rerr != nil {
		aside = path
	}
	l.unknown = fmt.Sprintf("the daily spend file %s was unreadable (%v)", aside, err)
	ev := p.log.Error().Err(err).Str("file", aside)
	if p.opts.DailyMaxCostUSD > 0 {
		ev.Msg("DAILY SPEND UNKNOWN: BRIDGE_DAILY_MAX_COST_USD cannot be enforced today, so every agent model call is refused until 00:00 UTC; fix or delete the file and restart the bridge to resume")
	} else {
		ev.Msg("daily spend unreadable; today's total starts from zero (no BRIDGE_DAILY_MAX_COST_USD is set)")
	}
	return l
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

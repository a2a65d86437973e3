package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// maxLogLine bounds one printed log line; longer lines are cut.
const maxLogLine = 64 << 10

var logsCmd = &Command{
	Name:  "logs",
	Usage: "logs [-f] [-n N] [--json] [--tunnel]",
	Short: "print the daemon's log (masked); -f follows it",
	Long: `Prints the last N lines (default 50) of the daemon's log: BRIDGE_LOG_FILE if set,
else <state>/bridge.log. --tunnel prints cloudflared's log instead. The path
secret, the API key and the tunnel token are masked in every line, and control
characters (which a job's text can carry) are shown escaped, as \u{1b}. The
daemon's JSON lines are printed readably (time, level, message, fields), as
` + "`bridgectl start --foreground`" + ` shows them; --json prints them as they are in the file.
-f keeps printing new lines until Ctrl-C.`,
	Run: runLogs,
}

func runLogs(ctx context.Context, e *Env, args []string) error {
	f := newFlags(e, false)
	follow := f.Bool("f", false, "follow: keep printing new lines")
	n := f.Int("n", 50, "how many lines from the end")
	tunnel := f.Bool("tunnel", false, "the tunnel's (cloudflared's) log")
	raw := f.Bool("json", false, "print the daemon's JSON lines as they are")
	if _, err := f.parse(args); err != nil {
		return err
	}
	if *n < 0 {
		return usageError{"-n must be 0 or more"}
	}
	c, err := f.load()
	if err != nil {
		return err
	}
	path, startsWith := c.logFile(), "`bridgectl start`"
	if *tunnel {
		path, startsWith = c.dir.TunnelLogFile(), "`bridgectl tunnel`"
	}
	ls, size, err := tailFile(path, *n)
	if errors.Is(err, os.ErrNotExist) && !*follow {
		if note := c.noStateDir(); note != "" && filepath.Dir(path) == c.dir.Root {
			fmt.Fprintf(e.Stdout, "not running; %s\n", note)
			return nil
		}
		fmt.Fprintf(e.Stdout, "no log yet at %s (it starts with %s)\n", path, startsWith)
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read log: %w", err)
	}
	print := func(l string) { printLogLine(e.Stdout, l, !*raw) }
	for _, l := range ls {
		print(l)
	}
	if !*follow {
		return nil
	}
	return followLog(ctx, print, path, size)
}

// tailFile returns the last n lines of the file at path and its size,
// reading it from the end (a log may be hundreds of MB).
func tailFile(path string, n int) ([]string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	ls, err := tailLines(f, fi.Size(), n)
	return ls, fi.Size(), err
}

// tailBlock is how much tailLines reads per step, from the end back.
const tailBlock = 64 << 10

// tailLines returns the last n lines of the first size bytes of r. It reads
// back from the end in blocks until it has them, and never more than n
// lines of maxLogLine (and a block): the start of a longer line is shown
// as "…".
func tailLines(r io.ReaderAt, size int64, n int) ([]string, error) {
	if n <= 0 || size <= 0 {
		return nil, nil
	}
	limit := int64(n)*(maxLogLine+1) + tailBlock
	var chunks [][]byte
	newlines, off := 0, size
	for off > 0 && size-off < limit && newlines <= n {
		step := min(int64(tailBlock), off)
		off -= step
		chunk := make([]byte, step)
		if _, err := r.ReadAt(chunk, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		newlines += bytes.Count(chunk, []byte{'\n'})
		chunks = append(chunks, chunk)
	}
	slices.Reverse(chunks)
	data := bytes.TrimSuffix(bytes.Join(chunks, nil), []byte{'\n'})
	segs := strings.Split(string(data), "\n")
	partial := off > 0 // the first segment may be the end of a longer line
	if len(segs) > n {
		segs, partial = segs[len(segs)-n:], false
	}
	if partial && len(segs) > 0 {
		segs[0] = "…" + segs[0]
	}
	return segs, nil
}

// logFile is the daemon's log: BRIDGE_LOG_FILE if set, else <state>/bridge.log.
func (c *ctl) logFile() string {
	if c.cfg.LogFile != "" {
		return c.cfg.LogFile
	}
	return c.dir.LogFile()
}

// printLogLine prints one log line, cut to maxLogLine bytes, with its
// terminal controls made visible; readable turns a JSON line into the
// console form (a line that is not JSON is printed as it is).
func printLogLine(w io.Writer, l string, readable bool) {
	cut := ""
	if len(l) > maxLogLine {
		l, cut = l[:maxLogLine], " …(cut)"
	}
	if readable {
		l = readableLogLine(l)
	}
	// The log holds text from jobs (tools, summaries, a raw stderr line):
	// controls are shown, never sent to the terminal.
	fmt.Fprintln(w, visibleLine(l, maxLogLine)+cut)
}

// followLog prints lines appended to path after offset until ctx ends. A
// truncated or replaced file is read again from its start.
func followLog(ctx context.Context, print func(string), path string, offset int64) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var partial []byte
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		if fi.Size() < offset {
			offset, partial = 0, nil
		}
		if fi.Size() == offset {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		chunk, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, offset, fi.Size()-offset), 4<<20))
		f.Close()
		if err != nil {
			return fmt.Errorf("read log: %w", err)
		}
		offset += int64(len(chunk))
		data := append(partial, chunk...)
		last := len(data)
		for last > 0 && data[last-1] != '\n' {
			last--
		}
		for _, l := range lines(data[:last]) {
			print(l)
		}
		partial = append([]byte(nil), data[last:]...)
	}
}

// readableLogLine is a JSON log line as the daemon prints it on a terminal:
// time, level, message, then the fields. Anything else is returned as is.
func readableLogLine(l string) string {
	if !strings.HasPrefix(l, "{") {
		return l
	}
	var b bytes.Buffer
	cw := zerolog.ConsoleWriter{Out: &b, NoColor: true, TimeFormat: time.DateTime}
	if _, err := cw.Write([]byte(l)); err != nil {
		return l
	}
	return strings.TrimSuffix(b.String(), "\n")
}

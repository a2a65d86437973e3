// Command standin is the stand-in agent harness of `make bench`: it plays
// Claude Code's part just enough for the bridge (stream-json system/init,
// then a successful result) so that timing a job counts only the bridge's
// own work. Its first act is to write the moment it started running (set
// before main, during package initialisation) to standin-<BRIDGE_JOB_ID>.start
// in its working directory, the job's workspace.
//
// The task (the first stream-json user message on stdin) selects what it
// does: "sleep DURATION" waits that long (or until SIGTERM) before answering;
// anything else answers at once.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// started is taken during package initialisation, before main runs.
var started = time.Now()

// maxSleep bounds a "sleep" task so a forgotten stand-in ends by itself.
const maxSleep = 5 * time.Minute

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
}

func run() error {
	id := os.Getenv("BRIDGE_JOB_ID")
	if id == "" {
		id = "nojob"
	}
	if err := os.WriteFile("standin-"+id+".start", []byte(strconv.FormatInt(started.UnixNano(), 10)), 0o600); err != nil {
		return fmt.Errorf("record the start time: %w", err)
	}
	out := bufio.NewWriter(os.Stdout)
	emit := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out.Write(append(b, '\n'))
		return out.Flush()
	}
	session := "standin-" + id
	if err := emit(map[string]any{"type": "system", "subtype": "init", "session_id": session, "model": "deepseek-flash", "cwd": ".", "tools": []string{}}); err != nil {
		return err
	}
	task, err := readTask()
	if err != nil {
		return err
	}
	if rest, ok := strings.CutPrefix(task, "sleep "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil || d < 0 || d > maxSleep {
			return fmt.Errorf("task %q: want sleep DURATION up to %s", task, maxSleep)
		}
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM, os.Interrupt)
		select {
		case <-time.After(d):
		case <-term:
			return fmt.Errorf("stopped by signal while sleeping")
		}
	}
	return emit(map[string]any{
		"type": "result", "subtype": "success", "is_error": false,
		"result": "stand-in harness done", "num_turns": 1, "session_id": session,
		"terminal_reason": "completed",
		"usage":           map[string]any{"input_tokens": 1, "output_tokens": 1},
	})
}

// readTask reads the first stream-json user message from stdin.
func readTask() (string, error) {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		return "", fmt.Errorf("no task on stdin: %v", sc.Err())
	}
	var msg struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
		return "", fmt.Errorf("task line is not stream-json: %w", err)
	}
	var text string
	if err := json.Unmarshal(msg.Message.Content, &text); err != nil {
		return "", fmt.Errorf("task content is not a string: %w", err)
	}
	return strings.TrimSpace(text), nil
}

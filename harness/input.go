// What a Claude Code run is told on its stream-json input: the task, the
// messages sent while it runs, and interrupts.

package harness

import (
	"encoding/json"
	"fmt"
)

var _ Messenger = (*run)(nil)

// userMessage is one stream-json user message line.
func userMessage(text string) ([]byte, error) {
	b, err := json.Marshal(map[string]any{
		"type":    "user",
		"message": map[string]any{"role": "user", "content": text},
	})
	return append(b, '\n'), err
}

// Send writes a user message; its turn follows the current one.
func (r *run) Send(text string) error {
	line, err := userMessage(text)
	if err != nil {
		return err
	}
	r.stdinMu.Lock()
	if r.stdinOff {
		r.stdinMu.Unlock()
		return ErrInputClosed
	}
	r.pending++ // before the write: its turn may end before Write returns
	r.stdinMu.Unlock()
	if err := r.write(line); err != nil {
		r.stdinMu.Lock()
		r.pending--
		r.stdinMu.Unlock()
		return err
	}
	return nil
}

// write writes one line to the harness's input.
func (r *run) write(line []byte) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if _, err := r.stdin.Write(line); err != nil {
		return fmt.Errorf("write to the harness: %w", err)
	}
	return nil
}

// Interrupt sends the control request that ends the current turn.
func (r *run) Interrupt() error {
	r.stdinMu.Lock()
	if r.stdinOff {
		r.stdinMu.Unlock()
		return ErrInputClosed
	}
	r.requests++
	n := r.requests
	r.stdinMu.Unlock()
	line, err := json.Marshal(map[string]any{
		"type": "control_request", "request_id": fmt.Sprintf("bridge-%d", n),
		"request": map[string]any{"subtype": "interrupt"},
	})
	if err != nil {
		return err
	}
	return r.write(append(line, '\n'))
}

// stopTurns sends the interrupt of a Stop: the current turn ends, and so
// does the run at the next result line (messages still queued are dropped).
func (r *run) stopTurns() error {
	if err := r.Interrupt(); err != nil {
		return err
	}
	r.stdinMu.Lock()
	r.pending = min(r.pending, 1)
	r.stdinMu.Unlock()
	return nil
}

// turnEnded counts a result line and, when it ends the last message's turn,
// closes the input (with stream-json input the process waits for more
// otherwise) and reports true.
func (r *run) turnEnded() bool {
	r.stdinMu.Lock()
	defer r.stdinMu.Unlock()
	r.pending--
	if r.pending > 0 {
		return false
	}
	if !r.stdinOff {
		r.stdinOff = true
		r.stdin.Close()
	}
	return true
}
